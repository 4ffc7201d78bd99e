package deps

import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/pflag"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/api/coordination/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/component-base/featuregate"
	_ "k8s.io/klog/v2"
	_ "k8s.io/utils/clock"
	_ "k8s.io/utils/clock/testing"
	_ "sigs.k8s.io/yaml"
	_ "k8s.io/kubelet/config/v1beta1"
)
