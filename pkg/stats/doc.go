// Package stats turns the runtime's usage model into the kubelet's stats: the /stats/summary document (k8s.io/kubelet's stats/v1alpha1 Summary) and the /metrics/resource series (node_, pod_ and container_ CPU and memory, resource_scrape_error).
package stats
