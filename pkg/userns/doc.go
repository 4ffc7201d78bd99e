// Package userns allocates the user namespaces of pods with hostUsers: false: a range of
// host IDs for each such pod, as the kubelet's user namespace manager does.
package userns
