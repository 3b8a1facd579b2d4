// Command kstatus prints what kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status), the library
// Flux and kpt read health with, computes for one object: its JSON on stdin, and on stdout
// `<Status>\t<message>` (Current, InProgress, Failed, Terminating, NotFound, Unknown).
// Used by the e2e tests on live SchedulerProfiles and PluginConfigs (tests/e2e/test_gitops_health.py).
package main

import (
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kstatus: reading stdin: %v\n", err)
		os.Exit(2)
	}
	obj := &unstructured.Unstructured{}
	// UnmarshalJSON keeps integers int64, as the API machinery decodes them (kstatus reads
	// metadata.generation as int64).
	if err := obj.UnmarshalJSON(raw); err != nil {
		fmt.Fprintf(os.Stderr, "kstatus: stdin is not a Kubernetes object in JSON: %v\n", err)
		os.Exit(2)
	}
	result, err := status.Compute(obj)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kstatus: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s\t%s\n", result.Status, result.Message)
}
