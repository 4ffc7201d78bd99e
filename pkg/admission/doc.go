// Package admission decides, as the kubelet's predicate admit handler does, whether a new pod fits the node next to the pods already admitted (max pods, cpu, memory, ephemeral storage, extended resources).
package admission
