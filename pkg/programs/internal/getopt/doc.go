// Package getopt parses an applet's command line as busybox's getopt32 does on glibc.
package getopt
