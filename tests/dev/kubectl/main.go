// kubectl for the tests that render the deploy overlays (`kubectl kustomize`) and dry-run them
// against the test apiserver: the same command tree as upstream's cmd/kubectl, built from the
// k8s.io/kubectl module by tests/dev/kubectl.sh when the machine has no kubectl.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
