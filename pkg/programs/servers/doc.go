// Package servers is the simulated servers of well-known images (nginx, httpd, redis): what they listen on and answer.
package servers
