// Package helm tests the Helm chart in agate/ without a cluster: it renders the chart with
// Helm's Go SDK (what `helm template` does) for each documented value set, decodes every
// rendered object strictly into the Kubernetes API's Go types (an unknown or misspelt
// field fails), checks the properties the chart promises, loads the rendered config.yaml
// with the rendered environment through the gateway's own config parser, and runs
// `helm lint`'s rules.
//
// It is a module of its own so that the gateway's `go test ./...` never compiles Helm and
// the Kubernetes libraries; .ci/run runs it as `(cd deploy/helm && go test ./...)`.
package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/agate-gateway/agate/config"
)

const (
	chartDir    = "agate"
	releaseName = "gw"
	namespace   = "llm"
	fullname    = "gw-agate"
)

// rendered is one rendering of the chart: its objects by kind and name, typed.
type rendered struct {
	deployments     map[string]*appsv1.Deployment
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	services        map[string]*corev1.Service
	serviceAccounts map[string]*corev1.ServiceAccount
	hpas            map[string]*autoscalingv2.HorizontalPodAutoscaler
	pdbs            map[string]*policyv1.PodDisruptionBudget
	serviceMonitors map[string]*unstructured.Unstructured

	serviceMonitorSchema *schema // testdata/servicemonitor.schema.yaml
}

// render renders the chart as `helm template gw agate -n llm -f <values>` does, and
// decodes every object strictly.
func render(t *testing.T, valuesYAML string) *rendered {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	vals, err := chartutil.ReadValues([]byte(valuesYAML))
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun = true
	install.DryRunOption = "client"
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = releaseName
	install.Namespace = namespace
	rel, err := install.Run(chrt, vals.AsMap())
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	r := &rendered{
		deployments:     map[string]*appsv1.Deployment{},
		configMaps:      map[string]*corev1.ConfigMap{},
		secrets:         map[string]*corev1.Secret{},
		services:        map[string]*corev1.Service{},
		serviceAccounts: map[string]*corev1.ServiceAccount{},
		hpas:            map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		pdbs:            map[string]*policyv1.PodDisruptionBudget{},
		serviceMonitors: map[string]*unstructured.Unstructured{},

		serviceMonitorSchema: loadSchema(t, "testdata/servicemonitor.schema.yaml"),
	}
	for file, doc := range releaseutil.SplitManifests(rel.Manifest) {
		if err := r.add(doc); err != nil {
			t.Fatalf("%s: %v\n%s", file, err, doc)
		}
	}
	if len(rel.Hooks) > 0 {
		t.Errorf("the chart has %d hooks; it is meant to have none", len(rel.Hooks))
	}
	return r
}

// add decodes one rendered document into its Kubernetes type, rejecting unknown fields
// and duplicate keys, and files it.
func (r *rendered) add(doc string) error {
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return err
	}
	var head struct{ APIVersion, Kind string }
	if err := json.Unmarshal(js, &head); err != nil {
		return err
	}
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 Deployment":
		return decodeInto(js, r.deployments)
	case "v1 ConfigMap":
		return decodeInto(js, r.configMaps)
	case "v1 Secret":
		return decodeInto(js, r.secrets)
	case "v1 Service":
		return decodeInto(js, r.services)
	case "v1 ServiceAccount":
		return decodeInto(js, r.serviceAccounts)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return decodeInto(js, r.hpas)
	case "policy/v1 PodDisruptionBudget":
		return decodeInto(js, r.pdbs)
	case "monitoring.coreos.com/v1 ServiceMonitor":
		// No Go types for the Prometheus Operator's CRDs here: the object is checked
		// against the CRD's published schema, and its metadata strictly as ObjectMeta.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return err
		}
		if errs := r.serviceMonitorSchema.validate("", u.Object); len(errs) > 0 {
			return fmt.Errorf("against the ServiceMonitor CRD's schema: %s", strings.Join(errs, "; "))
		}
		var meta struct {
			Metadata json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(js, &meta); err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(meta.Metadata))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&metav1.ObjectMeta{}); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		r.serviceMonitors[u.GetName()] = u
		return nil
	}
	return fmt.Errorf("unexpected object %s %s", head.APIVersion, head.Kind)
}

// named is what every Kubernetes object type has.
type named interface{ GetName() string }

// decodeInto decodes js into a new T with unknown fields rejected, and files it by name.
func decodeInto[T any, PT interface {
	*T
	named
}](js []byte, into map[string]PT) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	obj := PT(new(T))
	if err := dec.Decode(obj); err != nil {
		return err
	}
	if _, dup := into[obj.GetName()]; dup {
		return fmt.Errorf("two objects named %q", obj.GetName())
	}
	into[obj.GetName()] = obj
	return nil
}

// gateway returns the Deployment's gateway container and the pod spec.
func (r *rendered) gateway(t *testing.T) (*corev1.PodSpec, *corev1.Container) {
	t.Helper()
	d, ok := r.deployments[fullname]
	if !ok || len(r.deployments) != 1 {
		t.Fatalf("want the one Deployment %s, have %v", fullname, keys(r.deployments))
	}
	spec := &d.Spec.Template.Spec
	if len(spec.Containers) != 1 || spec.Containers[0].Name != "gateway" {
		t.Fatalf("want one container named gateway, have %+v", spec.Containers)
	}
	return spec, &spec.Containers[0]
}

// environ resolves the gateway container's environment as the kubelet would, from its
// env (values and secretKeyRefs) and envFrom, with the Secrets the chart rendered plus
// external (the Secrets that exist beforehand, by name).
func (r *rendered) environ(t *testing.T, external map[string]map[string]string) []string {
	t.Helper()
	_, c := r.gateway(t)
	secret := func(name string) map[string]string {
		if s, ok := r.secrets[name]; ok {
			m := map[string]string{}
			for k, v := range s.StringData {
				m[k] = v
			}
			for k, v := range s.Data {
				m[k] = string(v)
			}
			return m
		}
		if m, ok := external[name]; ok {
			return m
		}
		t.Fatalf("the container refers to Secret %q, which neither the chart nor the test made", name)
		return nil
	}
	var env []string
	for _, from := range c.EnvFrom {
		if from.SecretRef == nil {
			t.Fatalf("envFrom other than a Secret: %+v", from)
		}
		for k, v := range secret(from.SecretRef.Name) {
			env = append(env, k+"="+v)
		}
	}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			ref := e.ValueFrom.SecretKeyRef
			if ref == nil {
				t.Fatalf("env %s: valueFrom other than a secretKeyRef", e.Name)
			}
			val, ok := secret(ref.Name)[ref.Key]
			if !ok {
				t.Fatalf("env %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
			}
			v = val
		}
		env = append(env, e.Name+"="+v) // env wins over envFrom: later entries win in koanf too
	}
	return env
}

// gatewayConfig parses the rendered ConfigMap's config.yaml with the rendered environment
// through the gateway's own loader, as the pod would at start.
func (r *rendered) gatewayConfig(t *testing.T, external map[string]map[string]string) *config.Config {
	t.Helper()
	cm, ok := r.configMaps[fullname]
	if !ok {
		t.Fatalf("no ConfigMap %s; have %v", fullname, keys(r.configMaps))
	}
	data, ok := cm.Data["config.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no config.yaml: %v", fullname, keys(cm.Data))
	}
	cfg, err := config.Parse([]byte(data), r.environ(t, external))
	if err != nil {
		t.Fatalf("the gateway rejects the rendered config: %v", err)
	}
	return cfg
}

func keys[M ~map[string]V, V any](m M) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func envValue(c *corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// checkPod asserts what every value set promises of the pod: the image's entry point and
// config path, probes, graceful termination longer than the gateway's drain, a locked-down
// security context, and the volumes.
func checkPod(t *testing.T, r *rendered, cfg *config.Config) {
	t.Helper()
	spec, c := r.gateway(t)

	if e, _ := envValue(c, "GATEWAY_CONFIG"); e.Value != "/etc/agate/config.yaml" {
		t.Errorf("GATEWAY_CONFIG = %q, want /etc/agate/config.yaml (the Dockerfile's)", e.Value)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Name != "http" {
		t.Errorf("ports = %+v, want http 8080", c.Ports)
	}
	if cfg.Server.Listen != ":8080" {
		t.Errorf("server.listen = %q, but the container port is 8080", cfg.Server.Listen)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s probe: want an httpGet, have %+v", p.name, p.probe)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe: %s on port %s, want %s on http", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
		}
	}

	if spec.TerminationGracePeriodSeconds == nil {
		t.Error("terminationGracePeriodSeconds is not set")
	} else if grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; grace <= cfg.Server.ShutdownTimeout {
		t.Errorf("terminationGracePeriodSeconds %v is not longer than server.shutdown_timeout %v", grace, cfg.Server.ShutdownTimeout)
	}

	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext does not run as non-root: %+v", psc)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("the container has no securityContext")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Error("container: runAsNonRoot is not true")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("container: readOnlyRootFilesystem is not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("container: allowPrivilegeEscalation is not false")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("container: capabilities = %+v, want drop ALL and add none", sc.Capabilities)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("container: seccompProfile = %+v, want RuntimeDefault", sc.SeccompProfile)
	}

	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	cfgMount, ok := mounts["/etc/agate"]
	switch {
	case !ok:
		t.Error("nothing is mounted at /etc/agate")
	case cfgMount.SubPath != "":
		t.Error("/etc/agate is mounted with a subPath: the kubelet never updates those, so edits would not reload")
	case !cfgMount.ReadOnly:
		t.Error("/etc/agate is not mounted read-only")
	case volumes[cfgMount.Name].ConfigMap == nil || volumes[cfgMount.Name].ConfigMap.Name != fullname:
		t.Errorf("/etc/agate is volume %+v, want the ConfigMap %s", volumes[cfgMount.Name], fullname)
	}
	for _, dir := range []string{"/tmp", "/var/lib/agate"} {
		if m, ok := mounts[dir]; !ok || volumes[m.Name].EmptyDir == nil {
			t.Errorf("%s: want a writable emptyDir (the root filesystem is read-only)", dir)
		}
	}
	if spec.ServiceAccountName == "" || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("pod: serviceAccountName %q, automountServiceAccountToken %v; want the chart's account without a token", spec.ServiceAccountName, spec.AutomountServiceAccountToken)
	}

	svc, ok := r.services[fullname]
	if !ok {
		t.Fatalf("no Service %s", fullname)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports = %+v, want one to targetPort http", svc.Spec.Ports)
	}
	d := r.deployments[fullname]
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the pods do not carry", k, v)
		}
	}
}

func TestChart(t *testing.T) {
	tests := []struct {
		name     string
		values   string
		external map[string]map[string]string // Secrets that exist before the install
		check    func(t *testing.T, r *rendered, cfg *config.Config)
	}{
		{
			name:   "defaults",
			values: ``,
			check: func(t *testing.T, r *rendered, cfg *config.Config) {
				if got, want := keys(r.configMaps), []string{fullname}; !slices.Equal(got, want) {
					t.Errorf("ConfigMaps %v, want %v", got, want)
				}
				if len(r.secrets) != 0 || len(r.hpas) != 0 || len(r.serviceMonitors) != 0 {
					t.Errorf("defaults render Secrets %v, HPAs %v, ServiceMonitors %v; want none", keys(r.secrets), keys(r.hpas), keys(r.serviceMonitors))
				}
				if _, ok := r.serviceAccounts[fullname]; !ok {
					t.Errorf("no ServiceAccount %s", fullname)
				}
				if pdb, ok := r.pdbs[fullname]; !ok || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
					t.Errorf("want a PodDisruptionBudget with maxUnavailable 1, have %+v", r.pdbs)
				}
				d := r.deployments[fullname]
				if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
					t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
				}
				if *d.Spec.Template.Spec.TerminationGracePeriodSeconds != 45 {
					t.Errorf("terminationGracePeriodSeconds = %d, want 45 (30s drain + 15s)", *d.Spec.Template.Spec.TerminationGracePeriodSeconds)
				}
				if cfg.State.Type != "memory" || (cfg.Ledger.Type != "" && cfg.Ledger.Type != "off") {
					t.Errorf("state %q, ledger %q; want memory and off", cfg.State.Type, cfg.Ledger.Type)
				}
				if _, ok := d.Spec.Template.Annotations["checksum/config"]; ok {
					t.Error("checksum/config is set by default; the gateway reloads the mounted file itself")
				}
			},
		},
		{
			name: "inline secrets, a longer drain and roll on config change",
			values: `
secrets:
  ANTHROPIC_API_KEY: sk-ant-test
  ALICE_KEY: sk-alice
shutdownTimeoutSeconds: 120
rolloutOnConfigChange: true
podAnnotations: {team: llm}
config: |
  server: {listen: ":8080", shutdown_timeout: 2m}
  backends:
    claude: {type: anthropic, base_url: https://api.anthropic.com, api_key: "${ANTHROPIC_API_KEY}"}
  models:
    sonnet: {backend: claude, upstream_model: claude-sonnet-4-5}
  keys:
    alice: {key: "${ALICE_KEY}", models: ["*"]}
`,
			check: func(t *testing.T, r *rendered, cfg *config.Config) {
				s, ok := r.secrets[fullname]
				if !ok {
					t.Fatalf("no Secret %s", fullname)
				}
				if s.StringData["ANTHROPIC_API_KEY"] != "sk-ant-test" {
					t.Errorf("Secret data %v", keys(s.StringData))
				}
				if cfg.Backends["claude"].APIKey != "sk-ant-test" || cfg.Keys["alice"].Key != "sk-alice" {
					t.Error("the secrets did not reach the config through ${VAR}")
				}
				d := r.deployments[fullname]
				if *d.Spec.Template.Spec.TerminationGracePeriodSeconds != 135 {
					t.Errorf("terminationGracePeriodSeconds = %d, want 135", *d.Spec.Template.Spec.TerminationGracePeriodSeconds)
				}
				for _, a := range []string{"checksum/config", "checksum/secret", "team"} {
					if d.Spec.Template.Annotations[a] == "" {
						t.Errorf("pod annotation %s is missing", a)
					}
				}
			},
		},
		{
			name: "existing secret",
			values: `
existingSecret: agate-credentials
config: |
  backends:
    claude: {type: anthropic, base_url: https://api.anthropic.com, api_key: "${ANTHROPIC_API_KEY}"}
  models:
    sonnet: {backend: claude}
  keys:
    alice: {key: "${ALICE_KEY}", models: ["*"]}
`,
			external: map[string]map[string]string{"agate-credentials": {"ANTHROPIC_API_KEY": "sk-ant-ext", "ALICE_KEY": "sk-alice-ext"}},
			check: func(t *testing.T, r *rendered, cfg *config.Config) {
				if len(r.secrets) != 0 {
					t.Errorf("the chart made Secrets %v beside an existing one", keys(r.secrets))
				}
				if cfg.Backends["claude"].APIKey != "sk-ant-ext" {
					t.Error("the existing Secret's key did not reach the config")
				}
			},
		},
		{
			name: "redis and postgres, inline URLs",
			values: `
redis: {enabled: true, url: "redis://:pw@redis.llm.svc:6379/0"}
postgres: {enabled: true, url: "postgres://agate:pw@pg.llm.svc:5432/agate?sslmode=require"}
`,
			check: func(t *testing.T, r *rendered, cfg *config.Config) {
				if cfg.State.Type != "redis" || cfg.State.URL != "redis://:pw@redis.llm.svc:6379/0" {
					t.Errorf("state = %s %q", cfg.State.Type, cfg.State.URL)
				}
				if cfg.Ledger.Type != "postgres" || !strings.HasPrefix(cfg.Ledger.URL, "postgres://agate:pw@pg.llm.svc") {
					t.Errorf("ledger = %s %q", cfg.Ledger.Type, cfg.Ledger.URL)
				}
				if !strings.HasPrefix(cfg.Ledger.SpoolPath, "/var/lib/agate/") {
					t.Errorf("ledger.spool_path = %q, want it on the writable /var/lib/agate", cfg.Ledger.SpoolPath)
				}
				s := r.secrets[fullname]
				if s == nil || s.StringData["GATEWAY_STATE__URL"] == "" || s.StringData["GATEWAY_LEDGER__URL"] == "" {
					t.Fatalf("the database URLs are not in the chart's Secret: %+v", s)
				}
				_, c := r.gateway(t)
				for _, e := range c.Env {
					if strings.Contains(e.Value, "pw@") {
						t.Errorf("env %s holds a password in the pod spec", e.Name)
					}
				}
			},
		},
		{
			name: "redis and postgres URLs from existing secrets",
			values: `
redis: {enabled: true, urlSecret: {name: redis-conn, key: url}}
postgres: {enabled: true, urlSecret: {name: pg-conn, key: dsn}}
`,
			external: map[string]map[string]string{
				"redis-conn": {"url": "rediss://redis.example:6380/1"},
				"pg-conn":    {"dsn": "postgres://agate@pg.example/agate"},
			},
			check: func(t *testing.T, r *rendered, cfg *config.Config) {
				if len(r.secrets) != 0 {
					t.Errorf("the chart made Secrets %v", keys(r.secrets))
				}
				if cfg.State.URL != "rediss://redis.example:6380/1" || cfg.Ledger.URL != "postgres://agate@pg.example/agate" {
					t.Errorf("state.url %q ledger.url %q", cfg.State.URL, cfg.Ledger.URL)
				}
			},
		},
		{
			name: "hpa, pdb, servicemonitor and dashboard",
			values: `
autoscaling: {enabled: true, minReplicas: 3, maxReplicas: 12}
podDisruptionBudget: {enabled: true, maxUnavailable: 1}
serviceMonitor: {enabled: true, labels: {release: kube-prometheus-stack}, bearerTokenSecret: {name: metrics-token, key: token}}
grafanaDashboard: {enabled: true}
`,
			check: func(t *testing.T, r *rendered, cfg *config.Config) {
				d := r.deployments[fullname]
				if d.Spec.Replicas != nil {
					t.Errorf("replicas = %d with autoscaling on; the HPA owns it", *d.Spec.Replicas)
				}
				hpa, ok := r.hpas[fullname]
				if !ok {
					t.Fatal("no HorizontalPodAutoscaler")
				}
				if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != fullname || *hpa.Spec.MinReplicas != 3 || hpa.Spec.MaxReplicas != 12 {
					t.Errorf("HPA spec %+v", hpa.Spec)
				}
				if _, ok := r.pdbs[fullname]; !ok {
					t.Error("no PodDisruptionBudget")
				}
				sm, ok := r.serviceMonitors[fullname]
				if !ok {
					t.Fatal("no ServiceMonitor")
				}
				if sm.GetLabels()["release"] != "kube-prometheus-stack" {
					t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
				}
				eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				if len(eps) != 1 {
					t.Fatalf("ServiceMonitor endpoints %v", eps)
				}
				ep := eps[0].(map[string]any)
				if ep["port"] != "http" || ep["path"] != "/metrics" {
					t.Errorf("ServiceMonitor endpoint %v, want port http path /metrics", ep)
				}
				if name, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name"); name != "metrics-token" {
					t.Errorf("ServiceMonitor authorization %v", ep["authorization"])
				}
				sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
				for k, v := range sel {
					if r.services[fullname].Labels[k] != v {
						t.Errorf("the ServiceMonitor selects %s=%s, which the Service does not carry", k, v)
					}
				}

				dash, ok := r.configMaps[fullname+"-dashboard"]
				if !ok {
					t.Fatalf("no dashboard ConfigMap; have %v", keys(r.configMaps))
				}
				if dash.Labels["grafana_dashboard"] != "1" {
					t.Errorf("dashboard labels %v, want grafana_dashboard: \"1\"", dash.Labels)
				}
				want, err := os.ReadFile(filepath.Join("..", "grafana", "agate.json"))
				if err != nil {
					t.Fatal(err)
				}
				if dash.Data["agate.json"] != strings.TrimRight(string(want), "\n") {
					t.Error("the dashboard ConfigMap is not deploy/grafana/agate.json")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := render(t, tt.values)
			cfg := r.gatewayConfig(t, tt.external)
			checkPod(t, r, cfg)
			tt.check(t, r, cfg)
		})
	}
}

// TestChart_Rejects checks that values the chart cannot honour fail the install with a
// message naming the value, rather than rendering a pod that fails later.
func TestChart_Rejects(t *testing.T) {
	tests := []struct{ values, want string }{
		{`redis: {enabled: true}`, "redis.enabled needs redis.url or redis.urlSecret"},
		{`postgres: {enabled: true}`, "postgres.enabled needs postgres.url or postgres.urlSecret"},
		{`postgres: {enabled: true, urlSecret: {name: pg}}`, "postgres.urlSecret.key is required"},
		{`config: ""`, "config: the gateway's config.yaml is required"},
	}
	for _, tt := range tests {
		t.Run(tt.values, func(t *testing.T) {
			chrt, err := loader.Load(chartDir)
			if err != nil {
				t.Fatal(err)
			}
			vals, err := chartutil.ReadValues([]byte(tt.values))
			if err != nil {
				t.Fatal(err)
			}
			install := action.NewInstall(&action.Configuration{})
			install.DryRun, install.DryRunOption, install.ClientOnly = true, "client", true
			install.ReleaseName, install.Namespace = releaseName, namespace
			_, err = install.Run(chrt, vals.AsMap())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestChart_DashboardCopy checks that the chart's copy of the Grafana dashboard (a chart
// cannot reach files outside its directory) is deploy/grafana/agate.json byte for byte.
func TestChart_DashboardCopy(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "grafana", "agate.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(chartDir, "files", "agate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("deploy/helm/agate/files/agate.json differs from deploy/grafana/agate.json: cp deploy/grafana/agate.json deploy/helm/agate/files/")
	}
}

// TestLint runs `helm lint --strict`'s rules through the SDK with the defaults and with
// every optional part on: any warning or error fails.
func TestLint(t *testing.T) {
	for _, values := range []string{
		``,
		`{autoscaling: {enabled: true}, serviceMonitor: {enabled: true}, grafanaDashboard: {enabled: true}, redis: {enabled: true, url: "redis://r:6379"}, existingSecret: x}`,
	} {
		vals, err := chartutil.ReadValues([]byte(values))
		if err != nil {
			t.Fatal(err)
		}
		linter := lint.All(chartDir, vals.AsMap(), namespace, true)
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("lint %q: %s", values, m)
			} else {
				t.Logf("lint %q: %s", values, m)
			}
		}
	}
}
