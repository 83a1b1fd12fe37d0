// Command pause is the pod sandbox image of `make test-k8s`
// (scripts/k8s/cluster.sh): a static program FROM scratch that holds a
// pod's namespaces open until it is told to stop, so that the test
// cluster needs no image registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
