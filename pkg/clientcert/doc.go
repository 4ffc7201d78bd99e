// Package clientcert is a node's API client certificate: TLS bootstrap with a bootstrap token, and rotation, with client-go's certificate manager, as the kubelet does them.
package clientcert
