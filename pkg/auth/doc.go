// Package auth authenticates and authorizes requests to the secure port as the kubelet does.
package auth
