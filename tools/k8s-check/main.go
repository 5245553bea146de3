// k8s-check decodes every object of a rendered manifest (`helm template … | k8s-check`) strictly
// into its Go type from the Kubernetes API (k8s.io/api), KEDA (its ScaledObject and
// TriggerAuthentication) and the Prometheus Operator (ServiceMonitor, PrometheusRule): a field the
// type does not have, a value of the wrong type or a duplicated key fails, as does a kind it does
// not know. ScaledObjects also pass KEDA's own admission checks, and a `temporal` trigger and its
// TriggerAuthentication may only use the keys KEDA's Temporal scaler reads. It prints one line per
// object and exits 1 when any fails.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The kinds a chart of this service may render, each with a fresh value of its type.
var kinds = map[string]func() any{
	"v1/ConfigMap":                             func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                                func() any { return &corev1.Secret{} },
	"v1/Service":                               func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                        func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment":                       func() any { return &appsv1.Deployment{} },
	"batch/v1/Job":                             func() any { return &batchv1.Job{} },
	"autoscaling/v2/HorizontalPodAutoscaler":   func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":            func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":       func() any { return &networkingv1.NetworkPolicy{} },
	"rbac.authorization.k8s.io/v1/Role":        func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding": func() any { return &rbacv1.RoleBinding{} },
	"keda.sh/v1alpha1/ScaledObject":            func() any { return &kedav1alpha1.ScaledObject{} },
	"keda.sh/v1alpha1/TriggerAuthentication":   func() any { return &kedav1alpha1.TriggerAuthentication{} },
	"monitoring.coreos.com/v1/ServiceMonitor":  func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule":  func() any { return &monitoringv1.PrometheusRule{} },
}

// The trigger metadata KEDA's Temporal scaler reads (pkg/scalers/temporal*.go, its `keda:` tags of
// order triggerMetadata; `…FromEnv` for those it also resolves from the environment): 2.17's keys,
// and tlsServerName from 2.18. Any other key would be ignored there, so here it is an error.
var temporalMetadata = map[string]bool{
	"endpoint": true, "endpointFromEnv": true, "namespace": true, "namespaceFromEnv": true,
	"activationTargetQueueSize": true, "targetQueueSize": true, "taskQueue": true, "taskQueueFromEnv": true,
	"queueTypes": true, "buildId": true, "buildIdFromEnv": true, "selectAllActive": true,
	"selectUnversioned": true, "minConnectTimeout": true, "unsafeSsl": true, "tlsServerName": true,
}

// The authentication parameters the Temporal scaler reads (order authParams).
var temporalAuthParams = map[string]bool{"apiKey": true, "cert": true, "key": true, "keyPassword": true, "ca": true}

type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// documents splits a YAML stream on its `---` lines, dropping empty and comment-only documents.
func documents(r io.Reader) ([][]byte, error) {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		content := false
		for _, line := range strings.Split(cur.String(), "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				content = true
				break
			}
		}
		if content {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
		}
		cur.Reset()
	}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(line, "---") {
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return docs, scanner.Err()
}

func check(doc []byte) (string, error) {
	var h header
	if err := yaml.Unmarshal(doc, &h); err != nil {
		return "?", fmt.Errorf("not a YAML object: %w", err)
	}
	name := fmt.Sprintf("%s %s", h.Kind, h.Metadata.Name)
	newObject, known := kinds[h.APIVersion+"/"+h.Kind]
	if !known {
		return name, fmt.Errorf("unknown kind %s/%s", h.APIVersion, h.Kind)
	}
	obj := newObject()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return name, err
	}
	if h.Metadata.Name == "" {
		return name, errors.New("metadata.name is empty")
	}
	switch o := obj.(type) {
	case *kedav1alpha1.ScaledObject:
		return name, checkScaledObject(o)
	case *kedav1alpha1.TriggerAuthentication:
		for _, ref := range o.Spec.SecretTargetRef {
			if !temporalAuthParams[ref.Parameter] {
				return name, fmt.Errorf("secretTargetRef parameter %q is not one the Temporal scaler reads", ref.Parameter)
			}
		}
	}
	return name, nil
}

func checkScaledObject(so *kedav1alpha1.ScaledObject) error {
	if err := kedav1alpha1.ValidateTriggers(so.Spec.Triggers); err != nil {
		return err
	}
	if err := kedav1alpha1.CheckReplicaCountBoundsAreValid(so); err != nil {
		return err
	}
	if err := kedav1alpha1.CheckFallbackValid(so); err != nil {
		return err
	}
	for _, t := range so.Spec.Triggers {
		if t.Type != "temporal" {
			continue
		}
		var unknown []string
		for key := range t.Metadata {
			if !temporalMetadata[key] {
				unknown = append(unknown, key)
			}
		}
		sort.Strings(unknown)
		if len(unknown) > 0 {
			return fmt.Errorf("temporal trigger: metadata the scaler does not read: %s", strings.Join(unknown, ", "))
		}
		for _, required := range []string{"taskQueue", "targetQueueSize"} {
			if t.Metadata[required] == "" {
				return fmt.Errorf("temporal trigger: %s is required", required)
			}
		}
		if t.Metadata["endpoint"] == "" && t.Metadata["endpointFromEnv"] == "" {
			return errors.New("temporal trigger: endpoint is required")
		}
	}
	return nil
}

func main() {
	docs, err := documents(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "k8s-check: %v\n", err)
		os.Exit(2)
	}
	if len(docs) == 0 {
		fmt.Fprintln(os.Stderr, "k8s-check: no objects on stdin")
		os.Exit(2)
	}
	failed := 0
	for _, doc := range docs {
		name, err := check(doc)
		if err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", name, err)
		} else {
			fmt.Printf("ok   %s\n", name)
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}
