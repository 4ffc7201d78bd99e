// Package cpubudget bounds the real CPU a process spends running its nodes' simulated programs: a token bucket on the process's clock, shared by every node.
package cpubudget
