// Package memcg accounts the bytes a node's containers' programs hold, as memory cgroups do: charged before they are allocated, against the container's limit and the node's pods' limit, with the kernel's OOM killer choosing whom a full cgroup kills.
package memcg
