package simtest

import (
	"github.com/minikubelet/minikubelet/configs"
	"github.com/minikubelet/minikubelet/pkg/promrules"
)

// ShippedRules are the rule files of configs/prometheus/rules, as `--rules shipped` gives
// them, named by their file names.
func ShippedRules() []promrules.File {
	var out []promrules.File
	for _, f := range configs.PrometheusRules() {
		out = append(out, promrules.File{Name: f.Name, Data: f.Data})
	}
	return out
}
