// The API server's CPU to authenticate one request by its client certificate, when the client
// sends the leaf alone (Go's clients) and when it sends the root CA after it (OpenSSL's auto
// chain, which crd-scheduler turns off: scheduler_core/clientcert.py).
//
// kube-apiserver v1.36.3 runs two x509 authenticators on each request, in this order: the
// request-header one, whose roots are the front-proxy CA
// (staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go Verifier), then the
// client-certificate one, whose roots are the client CA (Authenticator). Each calls
// Certificate.Verify with the certificates after the leaf as intermediates, with no cache. This
// program does the same two calls.
//
//	go run ./bench/x509cost        (from the repository root: cd bench/x509cost && go run .)
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"sort"
	"time"
)

func newKey(kind string) crypto.Signer {
	var key crypto.Signer
	var err error
	if kind == "rsa-2048" {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		panic(err)
	}
	return key
}

func certificate(name string, key crypto.Signer, issuer *x509.Certificate, issuerKey crypto.Signer, ca bool) *x509.Certificate {
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		BasicConstraintsValid: true,
		IsCA:                  ca,
	}
	if ca {
		template.KeyUsage = x509.KeyUsageCertSign
	} else {
		template.KeyUsage = x509.KeyUsageDigitalSignature
		template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if issuer == nil {
		issuer, issuerKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, issuer, key.Public(), issuerKey)
	if err != nil {
		panic(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return parsed
}

// perRequest is the median over rounds of the mean CPU-bound time of the two authenticators' Verify calls.
func perRequest(leaf *x509.Certificate, sent []*x509.Certificate, clientCAs, frontProxyCAs *x509.CertPool) time.Duration {
	const requests, rounds = 2000, 5
	var means []time.Duration
	for r := 0; r < rounds; r++ {
		start := time.Now()
		for i := 0; i < requests; i++ {
			var intermediates *x509.CertPool
			if len(sent) > 0 { // as x509.go does, per request
				intermediates = x509.NewCertPool()
				for _, c := range sent {
					intermediates.AddCert(c)
				}
			}
			usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: frontProxyCAs, Intermediates: intermediates, KeyUsages: usage}); err == nil {
				panic("the front-proxy CA accepted a client certificate")
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: clientCAs, Intermediates: intermediates, KeyUsages: usage}); err != nil {
				panic(err)
			}
		}
		means = append(means, time.Since(start)/requests)
	}
	sort.Slice(means, func(i, j int) bool { return means[i] < means[j] })
	return means[rounds/2]
}

func main() {
	for _, kind := range []string{"ecdsa-p256", "rsa-2048"} {
		caKey, proxyKey, leafKey := newKey(kind), newKey(kind), newKey(kind)
		ca := certificate("client-ca", caKey, nil, nil, true)
		proxy := certificate("front-proxy-ca", proxyKey, nil, nil, true)
		leaf := certificate("admin", leafKey, ca, caKey, false)
		clientCAs, frontProxyCAs := x509.NewCertPool(), x509.NewCertPool()
		clientCAs.AddCert(ca)
		frontProxyCAs.AddCert(proxy)
		alone := perRequest(leaf, nil, clientCAs, frontProxyCAs)
		withCA := perRequest(leaf, []*x509.Certificate{ca}, clientCAs, frontProxyCAs)
		fmt.Fprintf(os.Stdout, "%s: leaf alone %.1f µs per request, leaf and root CA %.1f µs (x%.2f)\n",
			kind, float64(alone.Nanoseconds())/1000, float64(withCA.Nanoseconds())/1000, float64(withCA)/float64(alone))
	}
}
