package podstatus

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	timeType     = reflect.TypeFor[metav1.Time]()
	quantityType = reflect.TypeFor[resource.Quantity]()
)

// TestStatusEqualIsSemantic: statusEqual answers as apiequality.Semantic.DeepEqual for a
// status with every field set, compared with its copy, with the same values written
// otherwise (times elsewhere, quantities in other units, empty lists for nil ones) and with
// each status that differs from it in one place: every field reached by reflection is
// changed, every pointer made nil, every list emptied and grown. A field the API gains is
// changed too, so it fails here until statusEqual compares it.
func TestStatusEqualIsSemantic(t *testing.T) {
	var full v1.PodStatus
	fill(reflect.ValueOf(&full).Elem())
	check := func(name string, b *v1.PodStatus) {
		t.Helper()
		want := apiequality.Semantic.DeepEqual(full, *b)
		if got, back := statusEqual(&full, b), statusEqual(b, &full); got != want || back != want {
			t.Errorf("%s: statusEqual = %v (reversed %v), Semantic.DeepEqual = %v", name, got, back, want)
		}
	}
	check("a copy", full.DeepCopy())

	other := full.DeepCopy()
	berlin := time.FixedZone("CET", 3600)
	*other.StartTime = metav1.NewTime(other.StartTime.In(berlin))
	other.Conditions[0].LastTransitionTime = metav1.NewTime(other.Conditions[0].LastTransitionTime.In(berlin))
	other.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(other.ContainerStatuses[0].State.Running.StartedAt.In(berlin))
	for name := range other.AllocatedResources {
		other.AllocatedResources[name] = resource.MustParse("1000m")
	}
	for name := range other.ContainerStatuses[0].AllocatedResources {
		other.ContainerStatuses[0].AllocatedResources[name] = resource.MustParse("1000m")
	}
	check("the same values written otherwise", other)
	if !statusEqual(&v1.PodStatus{Conditions: []v1.PodCondition{}, ContainerStatuses: []v1.ContainerStatus{}}, &v1.PodStatus{}) {
		t.Error("empty lists differ from nil ones, want them equal as in Semantic")
	}

	changed := 0
	for i := 0; ; i++ {
		b := full.DeepCopy()
		k := i
		what, ok := mutate(reflect.ValueOf(b).Elem(), "status", &k)
		if !ok {
			break
		}
		check(what, b)
		if !apiequality.Semantic.DeepEqual(full, *b) {
			changed++
		}
	}
	if changed < 100 {
		t.Fatalf("only %d changes of a full status were tried; the walk is broken", changed)
	}
}

// fill sets every field of v to a value that is not its zero: pointers point, lists and
// maps hold one element.
func fill(v reflect.Value) {
	switch v.Type() {
	case timeType:
		v.Set(reflect.ValueOf(metav1.NewTime(time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC))))
		return
	case quantityType:
		v.Set(reflect.ValueOf(resource.MustParse("1")))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("a")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		key, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(key)
		fill(val)
		v.SetMapIndex(key, val)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	default:
		panic(fmt.Sprintf("fill: no value for %s", v.Type()))
	}
}

// mutate makes the k-th change of v's walk (k counts down to it) and says what it changed;
// false once there are fewer than k+1 changes to make.
func mutate(v reflect.Value, path string, k *int) (string, bool) {
	here := func(what string, change func()) (string, bool) {
		if *k > 0 {
			*k--
			return "", false
		}
		change()
		return path + ": " + what, true
	}
	switch v.Type() {
	case timeType:
		return here("a later time", func() { v.Set(reflect.ValueOf(metav1.NewTime(v.Interface().(metav1.Time).Add(time.Second)))) })
	case quantityType:
		return here("another quantity", func() { v.Set(reflect.ValueOf(resource.MustParse("2"))) })
	}
	switch v.Kind() {
	case reflect.String:
		return here("another string", func() { v.SetString(v.String() + "b") })
	case reflect.Bool:
		return here("flipped", func() { v.SetBool(!v.Bool()) })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return here("another number", func() { v.SetInt(v.Int() + 1) })
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return here("another number", func() { v.SetUint(v.Uint() + 1) })
	case reflect.Pointer:
		if what, ok := here("nil", func() { v.Set(reflect.Zero(v.Type())) }); ok {
			return what, true
		}
		return mutate(v.Elem(), path, k)
	case reflect.Slice:
		if what, ok := here("emptied", func() { v.Set(reflect.Zero(v.Type())) }); ok {
			return what, true
		}
		if what, ok := here("grown", func() { v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem()))) }); ok {
			return what, true
		}
		return mutate(v.Index(0), path+"[0]", k)
	case reflect.Map:
		if what, ok := here("emptied", func() { v.Set(reflect.Zero(v.Type())) }); ok {
			return what, true
		}
		for _, key := range v.MapKeys() {
			val := reflect.New(v.Type().Elem()).Elem()
			val.Set(v.MapIndex(key))
			if what, ok := mutate(val, fmt.Sprintf("%s[%v]", path, key), k); ok {
				v.SetMapIndex(key, val)
				return what, true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				if what, ok := mutate(v.Field(i), path+"."+f.Name, k); ok {
					return what, true
				}
			}
		}
	}
	return "", false
}
