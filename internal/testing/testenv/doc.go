// Package testenv starts a real kube-apiserver and etcd (controller-runtime's envtest) with
// every CRD the project needs installed, for integration tests and the local `dev` mode.
//
// The binaries are built from the Go module proxy by hack/envtest-bins/build.sh (`make
// envtest-bins`); setup-envtest's download is not used. Start the environment once per test
// package, from TestMain: start-up takes seconds, and the first create of each custom resource
// kind after its CRD is installed waits inside the apiserver.
package testenv
