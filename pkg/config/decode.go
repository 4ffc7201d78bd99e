package config

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/quantity"
)

// maxConfigFileSize bounds what LoadFile reads; a kubelet config is a few kB.
const maxConfigFileSize = 10 << 20

// File is what one config file holds. Either document may be missing (nil).
type File struct {
	// Path is the absolute path of the file.
	Path string
	// Kubelet is the KubeletConfiguration document with v1beta1 defaulting applied and a
	// relative staticPodPath resolved against the file's directory.
	Kubelet *KubeletConfiguration
	// Simulator is the SimulatorConfiguration document decoded over the defaults.
	Simulator *SimulatorConfiguration
	// UnsimulatedFields lists, sorted, the KubeletConfiguration fields the document sets
	// that the simulator accepts but does not model.
	UnsimulatedFields []string
	// setPaths holds the JSON paths (e.g. "kubeletConfiguration.maxPods") the file sets,
	// to say where a bad value came from.
	setPaths map[string]bool
}

// document is one YAML document of a config file.
type document struct {
	index int // 1-based, counting only non-empty documents
	line  int // 1-based line of the document's first content line
	data  []byte
}

// LoadFile reads a multi-document YAML config file strictly: every document must be a
// known apiVersion/kind, every field a known one of that kind with a value of the right
// type. All problems of the file are returned together, each naming the file, the
// document and the field.
func LoadFile(name string) (*File, error) {
	path, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("resolve config file path %q: %w", name, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("read config file %s: is a directory", path)
	}
	if info.Size() > maxConfigFileSize {
		return nil, fmt.Errorf("read config file %s: %d bytes is over the %d byte limit", path, info.Size(), maxConfigFileSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	return ParseFile(path, data)
}

// ParseFile decodes the content of the config file at path (which must be absolute, for
// resolving relative paths). See LoadFile.
func ParseFile(path string, data []byte) (*File, error) {
	f := &File{Path: path, setPaths: map[string]bool{}}
	var errs []error
	fail := func(doc document, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config file %s, document %d (line %d): %s", path, doc.index, doc.line, fmt.Sprintf(format, args...)))
	}
	// accept reports a decoded document's errors, or records the paths it sets.
	accept := func(doc document, set map[string]bool, derrs []error) bool {
		for _, e := range derrs {
			fail(doc, "%v", e)
		}
		if len(derrs) > 0 {
			return false
		}
		for p := range set {
			f.setPaths[p] = true
		}
		return true
	}
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	for _, doc := range docs {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(doc.data, &tm); err != nil {
			fail(doc, "not a YAML mapping with apiVersion and kind")
			continue
		}
		// A quantity with a huge exponent ("1e-666666000") would hold the decoding for hours.
		if err := quantity.CheckJSON(doc.data); err != nil {
			fail(doc, "%v", err)
			continue
		}
		switch {
		case tm.APIVersion == KubeletAPIVersion && tm.Kind == KubeletKind:
			if f.Kubelet != nil {
				fail(doc, "a second %s document; only one is allowed", KubeletKind)
				continue
			}
			kc, set, derrs := decodeKubelet(doc.data)
			if !accept(doc, set, derrs) {
				continue
			}
			f.Kubelet = kc
			f.UnsimulatedFields = unsimulatedFields(doc.data)
			if kc.StaticPodPath != "" && !filepath.IsAbs(kc.StaticPodPath) {
				kc.StaticPodPath = filepath.Join(filepath.Dir(path), kc.StaticPodPath)
			}
		case tm.APIVersion == SimulatorAPIVersion && tm.Kind == SimulatorKind:
			if f.Simulator != nil {
				fail(doc, "a second %s document; only one is allowed", SimulatorKind)
				continue
			}
			sc, set, derrs := decodeSimulator(doc.data)
			if !accept(doc, set, derrs) {
				continue
			}
			f.Simulator = sc
		case tm.APIVersion == "" || tm.Kind == "":
			fail(doc, "apiVersion and kind are required (%s %s or %s %s)", KubeletAPIVersion, KubeletKind, SimulatorAPIVersion, SimulatorKind)
		default:
			fail(doc, "unknown apiVersion/kind %s/%s (expected %s %s or %s %s)", tm.APIVersion, tm.Kind, KubeletAPIVersion, KubeletKind, SimulatorAPIVersion, SimulatorKind)
		}
	}
	if len(errs) > 0 {
		return nil, &AggregateError{Errs: errs}
	}
	return f, nil
}

// splitDocuments cuts a YAML stream at "---" lines and converts each non-empty document to
// JSON. Duplicate keys are an error, as in the kubelet's strict decoding.
func splitDocuments(data []byte) ([]document, error) {
	var (
		docs  []document
		cur   bytes.Buffer
		start = 1 // line where the current document starts
		line  = 0
	)
	flush := func() error {
		raw := cur.Bytes()
		cur.Reset()
		first := firstContentLine(raw)
		if first == 0 {
			return nil // only blank lines and comments
		}
		// Pad with the lines before the document so that YAML errors carry file line numbers.
		padded := append(bytes.Repeat([]byte("\n"), start-1), raw...)
		js, err := yaml.YAMLToJSONStrict(padded)
		if err != nil {
			return fmt.Errorf("document %d (line %d): invalid YAML: %w", len(docs)+1, start+first-1, err)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			return nil
		}
		docs = append(docs, document{index: len(docs) + 1, line: start + first - 1, data: js})
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), maxConfigFileSize)
	for sc.Scan() {
		line++
		text := sc.Text()
		if isDocumentSeparator(text) {
			if err := flush(); err != nil {
				return nil, err
			}
			start = line + 1
			continue
		}
		cur.WriteString(text)
		cur.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

// isDocumentSeparator reports whether a line starts a new YAML document: "---" alone or
// followed by white space (and possibly a comment).
func isDocumentSeparator(line string) bool {
	if !strings.HasPrefix(line, "---") {
		return false
	}
	rest := line[3:]
	return rest == "" || rest[0] == ' ' || rest[0] == '\t'
}

// firstContentLine returns the 1-based number of the first line that is neither blank nor
// a comment, or 0 if there is none.
func firstContentLine(raw []byte) int {
	for i, l := range strings.Split(string(raw), "\n") {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") {
			return i + 1
		}
	}
	return 0
}

// decodeKubelet strictly decodes a KubeletConfiguration document and applies defaulting.
func decodeKubelet(data []byte) (*KubeletConfiguration, map[string]bool, []error) {
	set := map[string]bool{}
	if errs := checkStrict(reflect.TypeOf(KubeletConfiguration{}), data, "kubeletConfiguration", set); len(errs) > 0 {
		return nil, nil, errs
	}
	kc := &KubeletConfiguration{}
	if err := json.Unmarshal(data, kc); err != nil {
		return nil, nil, []error{err}
	}
	SetKubeletDefaults(kc)
	// The simulator serves one HTTP listener on readOnlyPort, where 0 means "pick a free
	// port" (handy for tests), so an unwritten port takes the default 10255 instead of
	// v1beta1's 0-means-disabled.
	if !set["kubeletConfiguration.readOnlyPort"] {
		kc.ReadOnlyPort = DefaultReadOnlyPort
	}
	return kc, set, nil
}

// decodeSimulator strictly decodes a SimulatorConfiguration document over the defaults.
func decodeSimulator(data []byte) (*SimulatorConfiguration, map[string]bool, []error) {
	set := map[string]bool{}
	if errs := checkStrict(reflect.TypeOf(SimulatorConfiguration{}), data, "simulatorConfiguration", set); len(errs) > 0 {
		return nil, nil, errs
	}
	sc := NewSimulatorConfiguration()
	if err := json.Unmarshal(data, sc); err != nil {
		return nil, nil, []error{err}
	}
	return sc, set, nil
}

// unsimulatedFields lists the top-level keys of a KubeletConfiguration document that the
// simulator does not model. Keys written as null count as unset.
func unsimulatedFields(data []byte) []string {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil
	}
	var out []string
	for k, v := range top {
		if modelledKubeletFields[k] || k == "apiVersion" || k == "kind" || isNull(v) {
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkedNotSimulated are the typed KubeletConfiguration fields the simulator checks as
// the kubelet does but does not act on: like the raw ones, they are not modelled.
var checkedNotSimulated = map[string]bool{
	"failCgroupV1":                           true,
	"imagePullCredentialsVerificationPolicy": true,
	"preloadedImagesVerificationAllowlist":   true,
	"defaultPodSysctls":                      true,
	"memoryReservationPolicy":                true,
	"tlsCurvePreferences":                    true,
}

// modelledKubeletFields are the KubeletConfiguration fields the simulator uses: the typed
// fields of KubeletConfiguration but checkedNotSimulated.
var modelledKubeletFields = func() map[string]bool {
	m := map[string]bool{}
	raw := reflect.TypeOf(json.RawMessage{})
	for name, f := range jsonFields(reflect.TypeOf(KubeletConfiguration{})) {
		if f.Type != raw && !checkedNotSimulated[name] && name != "apiVersion" && name != "kind" {
			m[name] = true
		}
	}
	return m
}()

// ModelledKubeletFields returns the sorted names of the KubeletConfiguration fields the
// simulator uses.
func ModelledKubeletFields() []string {
	out := make([]string, 0, len(modelledKubeletFields))
	for k := range modelledKubeletFields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

var jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// checkStrict walks data (JSON) along the Go type t and reports, with their JSON path,
// every unknown field and every value that does not decode into its field's type. Field
// names must match exactly; encoding/json alone would accept "SyncFrequency" for
// "syncFrequency" and stop at the first problem. Paths of the fields present are added
// to set.
func checkStrict(t reflect.Type, data []byte, path string, set map[string]bool) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(data) {
		return nil
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || t.Implements(jsonUnmarshaler) {
		if err := json.Unmarshal(data, reflect.New(t).Interface()); err != nil {
			return []error{fmt.Errorf("%s: invalid value %s: %v", path, data, err)}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return []error{fmt.Errorf("%s: invalid value %s: expected an object", path, data)}
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var errs []error
		for _, k := range keys {
			f, ok := fields[k]
			if !ok {
				errs = append(errs, fmt.Errorf("unknown field %q", path+"."+k))
				continue
			}
			set[path+"."+k] = true
			errs = append(errs, checkStrict(f.Type, obj[k], path+"."+k, set)...)
		}
		return errs
	case reflect.Map:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return []error{fmt.Errorf("%s: invalid value %s: expected an object", path, data)}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var errs []error
		for _, k := range keys {
			set[path+"["+k+"]"] = true
			errs = append(errs, checkStrict(t.Elem(), obj[k], path+"["+k+"]", set)...)
		}
		return errs
	case reflect.Slice:
		var arr []json.RawMessage
		if err := json.Unmarshal(data, &arr); err != nil {
			return []error{fmt.Errorf("%s: invalid value %s: expected a list", path, data)}
		}
		var errs []error
		for i, el := range arr {
			p := fmt.Sprintf("%s[%d]", path, i)
			set[p] = true
			errs = append(errs, checkStrict(t.Elem(), el, p, set)...)
		}
		return errs
	default:
		if err := json.Unmarshal(data, reflect.New(t).Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return []error{fmt.Errorf("%s: invalid value %s: expected %s", path, data, kindName(t))}
			}
			return []error{fmt.Errorf("%s: invalid value %s: %v", path, data, err)}
		}
		return nil
	}
}

// kindName describes a scalar Go type the way a YAML author thinks of it.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer (" + t.Kind().String() + ")"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer (" + t.Kind().String() + ")"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

// jsonFields maps the JSON names of t's fields to the fields, promoting the fields of
// embedded structs without a JSON name (such as the inline metav1.TypeMeta), as
// encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && !strings.Contains(tag, ",") {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}
