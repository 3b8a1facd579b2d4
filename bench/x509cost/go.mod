module crd-scheduler/bench/x509cost

go 1.22
