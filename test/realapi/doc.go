// Package realapi runs the Kubernetes-facing code of the program (the
// destroy cleanup, the bootstrap watch, the node objects it applies)
// against a real kube-apiserver and etcd on 127.0.0.1, started by its
// tests (test/apiserver/install.sh builds and installs them). What a fake
// can only assert, the real server answers: label and field selectors,
// paged lists, the protection finalizers it adds, graceful deletion with
// no kubelet, generated names, status subresources, CRD validation,
// defaulting and pruning.
package realapi
