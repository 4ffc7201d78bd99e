// Package images is the catalogue of well-known container images (what each contains and runs) and the registry rules that say which references can be pulled.
package images
