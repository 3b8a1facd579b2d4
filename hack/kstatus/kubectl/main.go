// Command kubectl is upstream's kubectl: the main of k8s.io/kubernetes/cmd/kubectl/kubectl.go
// at v1.36.3, built from the k8s.io/kubectl module (same version as the control plane) so that
// the e2e tests can run `kubectl wait --for=condition=Ready` against the dev cluster.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// Import to initialize client auth plugins.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
