// Package servingcert loads the secure port's TLS certificate, or makes a self-signed one as the kubelet does.
package servingcert
