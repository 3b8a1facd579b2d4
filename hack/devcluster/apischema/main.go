// Command apischema writes the field schema of the Kubernetes kinds crd-scheduler reads
// (scheduler_core/apivalidation/schema.json): for every struct reachable from those kinds,
// its JSON field names and their types, taken by reflection from k8s.io/api at the version
// pinned in ../go.mod. The Python validation layer uses it for the API server's strict
// decoding (unknown fields) and JSON type checks. Regenerate with:
//
//	cd hack/devcluster && go run ./apischema > ../../scheduler_core/apivalidation/schema.json
package main

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type kind struct {
	APIVersion string `json:"apiVersion"`
	Type       string `json:"type"`
}

var (
	types   = map[string]map[string]string{}
	special = map[reflect.Type]string{
		reflect.TypeOf(resource.Quantity{}):          "quantity",
		reflect.TypeOf(intstr.IntOrString{}):         "intorstring",
		reflect.TypeOf(metav1.Time{}):                "time",
		reflect.TypeOf(metav1.MicroTime{}):           "time",
		reflect.TypeOf(metav1.Duration{}):            "string",
		reflect.TypeOf(runtime.RawExtension{}):       "any",
		reflect.TypeOf(metav1.FieldsV1{}):            "any",
		reflect.TypeOf(corev1.ResourceList{}):        "map[quantity]",
		reflect.TypeOf(resourcev1.DeviceAttribute{}): "any",
	}
)

func typeName(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	return strings.Join(parts[len(parts)-2:], "/") + "." + t.Name()
}

func expr(t reflect.Type) string {
	if s, ok := special[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.Pointer:
		return expr(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "int64"
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8:
		return "int32"
	case reflect.Float32, reflect.Float64:
		return "float64"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "[]" + expr(t.Elem())
	case reflect.Map:
		return "map[" + expr(t.Elem()) + "]"
	case reflect.Interface:
		return "any"
	case reflect.Struct:
		name := typeName(t)
		if _, done := types[name]; !done {
			fields := map[string]string{}
			types[name] = fields
			addFields(t, fields)
		}
		return name
	}
	panic("unhandled type " + t.String())
}

func addFields(t reflect.Type, fields map[string]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name := strings.Split(tag, ",")[0]
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" || strings.Contains(tag, ",inline") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			addFields(ft, fields)
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = expr(f.Type)
	}
}

func main() {
	objects := map[string]struct {
		apiVersion string
		obj        any
	}{
		"Pod":                   {"v1", corev1.Pod{}},
		"Node":                  {"v1", corev1.Node{}},
		"PersistentVolume":      {"v1", corev1.PersistentVolume{}},
		"PersistentVolumeClaim": {"v1", corev1.PersistentVolumeClaim{}},
		"Namespace":             {"v1", corev1.Namespace{}},
		"Service":               {"v1", corev1.Service{}},
		"ReplicationController": {"v1", corev1.ReplicationController{}},
		"ReplicaSet":            {"apps/v1", appsv1.ReplicaSet{}},
		"StatefulSet":           {"apps/v1", appsv1.StatefulSet{}},
		"PodDisruptionBudget":   {"policy/v1", policyv1.PodDisruptionBudget{}},
		"PriorityClass":         {"scheduling.k8s.io/v1", schedulingv1.PriorityClass{}},
		"StorageClass":          {"storage.k8s.io/v1", storagev1.StorageClass{}},
		"CSINode":               {"storage.k8s.io/v1", storagev1.CSINode{}},
		"CSIDriver":             {"storage.k8s.io/v1", storagev1.CSIDriver{}},
		"CSIStorageCapacity":    {"storage.k8s.io/v1", storagev1.CSIStorageCapacity{}},
		"VolumeAttachment":      {"storage.k8s.io/v1", storagev1.VolumeAttachment{}},
		"ResourceClaim":         {"resource.k8s.io/v1", resourcev1.ResourceClaim{}},
		"ResourceClaimTemplate": {"resource.k8s.io/v1", resourcev1.ResourceClaimTemplate{}},
		"DeviceClass":           {"resource.k8s.io/v1", resourcev1.DeviceClass{}},
		"ResourceSlice":         {"resource.k8s.io/v1", resourcev1.ResourceSlice{}},
	}
	kinds := map[string]kind{}
	for name, o := range objects {
		kinds[name] = kind{o.apiVersion, expr(reflect.TypeOf(o.obj))}
	}
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", " ")
	if err := out.Encode(map[string]any{"source": "k8s.io/api v0.36.3 (hack/devcluster/apischema)", "kinds": kinds, "types": types}); err != nil {
		panic(err)
	}
}
