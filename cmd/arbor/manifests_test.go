package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/arbordb/arbor/cluster"
)

// The deployment files are configuration for this binary, so they are
// tested against it: every container's command line and environment go
// through arbor's own flag parser and validation, and what the manifests
// promise around it (probes, ports, volumes, peers) must agree with the
// parsed settings.

const (
	manifestK8sDir      = "../../deploy/k8s"
	manifestComposeFile = "../../deploy/compose.yaml"
	manifestReadme      = "../../deploy/README.md"
)

// k8sManifests is deploy/k8s decoded into the Kubernetes API types.
type k8sManifests struct {
	namespace    string
	imageNames   []string
	statefulSets []*appsv1.StatefulSet
	services     map[string]*corev1.Service
	pdbs         []*policyv1.PodDisruptionBudget
	namespaces   []string
}

// kustomization is the part of kustomization.yaml the checks read.
type kustomization struct {
	Namespace string   `json:"namespace"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name string `json:"name"`
	} `json:"images"`
}

// loadK8sManifests decodes every resource of the kustomization strictly
// (an unknown or misspelt field fails) and requires that the kustomization
// lists exactly the YAML files of the directory.
func loadK8sManifests(t *testing.T) k8sManifests {
	t.Helper()
	var k kustomization
	readManifestYAML(t, filepath.Join(manifestK8sDir, "kustomization.yaml"), &k)
	files, err := filepath.Glob(filepath.Join(manifestK8sDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" {
			onDisk = append(onDisk, base)
		}
	}
	listed := slices.Clone(k.Resources)
	slices.Sort(listed)
	if !slices.Equal(listed, onDisk) {
		t.Fatalf("kustomization resources %v, want the directory's YAML files %v", listed, onDisk)
	}
	m := k8sManifests{namespace: k.Namespace, services: map[string]*corev1.Service{}}
	for _, img := range k.Images {
		m.imageNames = append(m.imageNames, img.Name)
	}
	for _, name := range k.Resources {
		data, err := os.ReadFile(filepath.Join(manifestK8sDir, name))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitYAMLDocuments(data) {
			if err := m.add(doc); err != nil {
				t.Fatalf("%s, document %d: %v", name, i+1, err)
			}
		}
	}
	return m
}

// add decodes one YAML document by its kind.
func (m *k8sManifests) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 StatefulSet":
		var s appsv1.StatefulSet
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		m.statefulSets = append(m.statefulSets, &s)
	case "v1 Service":
		var s corev1.Service
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		m.services[s.Name] = &s
	case "policy/v1 PodDisruptionBudget":
		var p policyv1.PodDisruptionBudget
		if err := yaml.UnmarshalStrict(doc, &p); err != nil {
			return err
		}
		m.pdbs = append(m.pdbs, &p)
	case "v1 Namespace":
		var n corev1.Namespace
		if err := yaml.UnmarshalStrict(doc, &n); err != nil {
			return err
		}
		m.namespaces = append(m.namespaces, n.Name)
	default:
		// A new kind needs its own checks here before it ships.
		return fmt.Errorf("unchecked kind %q %q", tm.APIVersion, tm.Kind)
	}
	return nil
}

// yamlSeparator and yamlComment find document separators and comment
// lines in a YAML file.
var (
	yamlSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)
	yamlComment   = regexp.MustCompile(`(?m)^\s*#.*$`)
)

// splitYAMLDocuments splits a multi-document YAML file on its "---" lines
// and drops documents that hold only comments.
func splitYAMLDocuments(data []byte) [][]byte {
	var docs [][]byte
	for _, doc := range yamlSeparator.Split(string(data), -1) {
		if strings.TrimSpace(yamlComment.ReplaceAllString(doc, "")) != "" {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}

// readManifestYAML decodes the YAML file name into v, leniently: v names
// only the fields the checks read.
func readManifestYAML(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// manifestNode is one node's resolved command line and environment, as the
// process would see them, and its mounts.
type manifestNode struct {
	args   []string // after "serve"
	env    []string // NAME=value
	mounts []manifestMount
}

// manifestMount is a volume mounted into a node's container.
type manifestMount struct {
	path     string
	readOnly bool
	secret   bool // holds key material (a Secret, or a read-only bind mount)
	data     bool // a persistent volume
}

// parse returns the node's settings as the manifest spells them, once
// arbor's own flag parser and validation have accepted them.
func (n manifestNode) parse(t *testing.T) serveConfig {
	t.Helper()
	// First pass, without validation (the key files do not exist here):
	// the paths it yields say where to create them.
	cfg := defaultServeConfig("")
	fs := flag.NewFlagSet("arbor serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.bindFlags(fs)
	if err := fs.Parse(n.args); err != nil {
		t.Fatalf("args %q: %v", n.args, err)
	}
	lookup := manifestEnv(n.env)
	warnings, err := applyEnv(fs, lookup, n.env)
	if err != nil {
		t.Fatalf("environment: %v", err)
	}
	if len(warnings) > 0 {
		t.Errorf("arbor would warn: %q", warnings)
	}

	// Second pass, the real one: parseServeConfig, with the key material
	// created under a temporary root that stands in for the mounts.
	root := t.TempDir()
	writeKeyMaterial(t, root, cfg, n.secretDirs())
	rewrite := func(s string) string {
		for _, dir := range n.secretDirs() {
			s = strings.ReplaceAll(s, dir+"/", filepath.Join(root, dir)+"/")
		}
		return s
	}
	args := make([]string, len(n.args))
	for i, a := range n.args {
		args[i] = rewrite(a)
	}
	env := make([]string, len(n.env))
	for i, kv := range n.env {
		env[i] = rewrite(kv)
	}
	if _, _, err := parseServeConfig(args, manifestEnv(env), env, io.Discard); err != nil {
		t.Fatalf("arbor serve would refuse this configuration: %v", err)
	}
	return cfg
}

// secretDirs are the mounts that may hold key material.
func (n manifestNode) secretDirs() []string {
	var dirs []string
	for _, m := range n.mounts {
		if m.secret {
			dirs = append(dirs, m.path)
		}
	}
	return dirs
}

// mountOf returns the mount that holds the container path p.
func (n manifestNode) mountOf(p string) (manifestMount, bool) {
	for _, m := range n.mounts {
		if p == m.path || strings.HasPrefix(p, m.path+"/") {
			return m, true
		}
	}
	return manifestMount{}, false
}

// checkFiles requires the data directory on a writable persistent volume
// and the key files in read-only secret mounts, laid out as
// `arbor certs init --dir D --hosts <advertise host>,…` writes them, so
// that the documented commands produce what the node reads.
func (n manifestNode) checkFiles(t *testing.T, cfg serveConfig) {
	t.Helper()
	if m, ok := n.mountOf(cfg.DataDir); !ok || !m.data || m.readOnly || m.path != cfg.DataDir {
		t.Errorf("--data-dir %s: want exactly the mount point of a writable persistent volume, got %+v", cfg.DataDir, m)
	}
	want := map[string]string{
		"--tls-ca":     "ca.pem",
		"--tls-cert":   cfg.AdvertiseHost + ".pem",
		"--tls-key":    cfg.AdvertiseHost + "-key.pem",
		"--gossip-key": "gossip.key",
	}
	got := map[string]string{"--tls-ca": cfg.TLSCA, "--tls-cert": cfg.TLSCert, "--tls-key": cfg.TLSKey, "--gossip-key": gossipKeyFlag(cfg)}
	dir := path.Dir(cfg.TLSCA)
	for flagName, file := range got {
		if m, ok := n.mountOf(file); !ok || !m.secret || !m.readOnly {
			t.Errorf("%s %s: want a file in a read-only secret mount", flagName, file)
		}
		if path.Base(file) != want[flagName] || path.Dir(file) != dir {
			t.Errorf("%s %s: want %s beside ca.pem (arbor certs init's layout)", flagName, file, path.Join(dir, want[flagName]))
		}
	}
}

// gossipKeyFlag is the manifest's one --gossip-key value ("" for none;
// several come out joined by commas, a path no check accepts).
func gossipKeyFlag(cfg serveConfig) string { return strings.Join(cfg.GossipKeys, ",") }

// manifestEnv serves os.LookupEnv's role from a NAME=value list; the last
// definition wins, as in a process environment built in order.
func manifestEnv(env []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, _ := strings.Cut(env[i], "="); k == name {
				return v, true
			}
		}
		return "", false
	}
}

// writeKeyMaterial creates, under root, the files the node's flags name:
// a CA, a certificate for the advertise host signed by it, its key, and a
// gossip key. A gossip key given inline (rather than as a file) fails:
// it would sit in the manifest in clear.
func writeKeyMaterial(t *testing.T, root string, cfg serveConfig, secretDirs []string) {
	t.Helper()
	if cfg.TLSCA == "" || cfg.TLSCert == "" || cfg.TLSKey == "" || gossipKeyFlag(cfg) == "" {
		t.Fatalf("a cluster node needs --tls-ca, --tls-cert, --tls-key and --gossip-key; got %q %q %q %q",
			cfg.TLSCA, cfg.TLSCert, cfg.TLSKey, gossipKeyFlag(cfg))
	}
	if !slices.ContainsFunc(secretDirs, func(d string) bool { return strings.HasPrefix(gossipKeyFlag(cfg), d+"/") }) {
		t.Fatalf("--gossip-key %q: want the path of a file in a secret mount, not the key itself", gossipKeyFlag(cfg))
	}
	caKey, ca := newManifestCert(t, "manifest test CA", nil, nil, nil)
	leafKey, leaf := newManifestCert(t, cfg.AdvertiseHost, []string{cfg.AdvertiseHost}, ca, caKey)
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		t.Fatal(err)
	}
	gossip := make([]byte, cluster.GossipKeyLen)
	if _, err := rand.Read(gossip); err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string][]byte{
		cfg.TLSCA:          pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}),
		cfg.TLSCert:        pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}),
		cfg.TLSKey:         pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		gossipKeyFlag(cfg): []byte(base64.StdEncoding.EncodeToString(gossip) + "\n"),
	} {
		full := filepath.Join(root, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// newManifestCert makes an ECDSA certificate: a self-signed CA when parent
// is nil, else a leaf for hosts signed by parent.
func newManifestCert(t *testing.T, cn string, hosts []string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     hosts,
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

// listenPort is the port of a listen address such as ":8443".
func listenPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		t.Fatalf("address %q: a deployment needs a fixed port", addr)
	}
	return int32(n)
}

// checkJoin requires every --join entry to be one of hosts at the gossip
// port.
func checkJoin(t *testing.T, cfg serveConfig, hosts []string) {
	t.Helper()
	if len(cfg.Join) == 0 {
		t.Fatal("--join is empty: the nodes would never meet")
	}
	gossipPort := strconv.Itoa(int(listenPort(t, cfg.GossipAddr)))
	for _, j := range cfg.Join {
		host, port, err := net.SplitHostPort(j)
		if err != nil || port != gossipPort || !slices.Contains(hosts, host) {
			t.Errorf("--join entry %q: want one of %v at the gossip port %s", j, hosts, gossipPort)
		}
	}
}

// TestK8sManifests checks deploy/k8s against the flags of its container,
// one invariant per subtest.
func TestK8sManifests(t *testing.T) {
	d := loadK8sDeployment(t)
	for _, check := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"statefulset", d.checkStatefulSet},
		{"bootstrap-expect forms the cluster", d.checkBootstrapExpect},
		{"identity and peers", d.checkPeers},
		{"ports", d.checkPorts},
		{"probes", d.checkProbes},
		{"volumes", d.checkVolumes},
		{"shutdown", d.checkShutdown},
		{"security", d.checkSecurity},
		{"disruption budget and spreading", d.checkDisruption},
		{"secrets are documented", d.checkSecretsDocumented},
	} {
		t.Run(check.name, check.fn)
	}
}

// TestK8sManifestsScaleWithoutOtherChanges: `kubectl scale --replicas=5`
// on the manifest as it is (issue 13's staged voters) gives five pods
// whose settings still pass every check, with --bootstrap-expect left
// at 3, and so does scaling back to three.
func TestK8sManifestsScaleWithoutOtherChanges(t *testing.T) {
	for _, replicas := range []int32{5, 3} {
		d := loadK8sDeployment(t)
		d.sts.Spec.Replicas = &replicas
		d.replicas = int(replicas)
		d.specs, d.nodes = nil, nil
		for i := range d.replicas {
			spec := k8sNode(t, d.sts, d.c, d.podName(i), d.namespace)
			d.specs = append(d.specs, spec)
			d.nodes = append(d.nodes, spec.parse(t))
		}
		t.Run(fmt.Sprint(replicas), func(t *testing.T) {
			d.checkBootstrapExpect(t)
			d.checkPeers(t)
			if got := d.nodes[len(d.nodes)-1].BootstrapExpect; got != 3 {
				t.Errorf("pod %s: --bootstrap-expect %d, want the manifest's 3 unchanged", d.podName(d.replicas-1), got)
			}
		})
	}
}

// k8sDeployment is the StatefulSet's pod and everything around it, with
// every replica's settings as arbor parses them.
type k8sDeployment struct {
	k8sManifests
	sts       *appsv1.StatefulSet
	pod       corev1.PodSpec
	c         corev1.Container
	podLabels labels.Set
	headless  *corev1.Service
	replicas  int
	specs     []manifestNode // per ordinal
	nodes     []serveConfig  // per ordinal
}

// loadK8sDeployment loads the manifests and parses every replica's
// configuration (each pod has its own name, hence its own settings).
func loadK8sDeployment(t *testing.T) *k8sDeployment {
	t.Helper()
	m := loadK8sManifests(t)
	if len(m.statefulSets) != 1 || len(m.pdbs) != 1 {
		t.Fatalf("want one StatefulSet and one PodDisruptionBudget, got %d and %d", len(m.statefulSets), len(m.pdbs))
	}
	if m.namespace == "" || !slices.Equal(m.namespaces, []string{m.namespace}) {
		t.Errorf("namespace.yaml declares %v, want the kustomization's namespace %q", m.namespaces, m.namespace)
	}
	d := &k8sDeployment{k8sManifests: m, sts: m.statefulSets[0]}
	d.pod = d.sts.Spec.Template.Spec
	d.podLabels = labels.Set(d.sts.Spec.Template.Labels)
	if len(d.pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(d.pod.Containers))
	}
	d.c = d.pod.Containers[0]
	if len(d.c.Command) != 0 || len(d.c.Args) == 0 || d.c.Args[0] != "serve" {
		t.Fatalf("command %q args %q: want the image's entrypoint (/arbor) and args starting with serve", d.c.Command, d.c.Args)
	}
	if d.sts.Spec.Replicas == nil {
		t.Fatal("replicas must be explicit: --bootstrap-expect is checked against it")
	}
	d.replicas = int(*d.sts.Spec.Replicas)
	if d.headless = m.services[d.sts.Spec.ServiceName]; d.headless == nil {
		t.Fatalf("serviceName %q: no such Service", d.sts.Spec.ServiceName)
	}
	for i := range d.replicas {
		spec := k8sNode(t, d.sts, d.c, d.podName(i), m.namespace)
		d.specs = append(d.specs, spec)
		d.nodes = append(d.nodes, spec.parse(t))
	}
	return d
}

// podName is the name of the StatefulSet's pod number i.
func (d *k8sDeployment) podName(i int) string { return fmt.Sprintf("%s-%d", d.sts.Name, i) }

// checkStatefulSet: all pods start at once (none can be ready before a
// quorum has met), updates go one pod at a time, and the image is the one
// the kustomization tags.
func (d *k8sDeployment) checkStatefulSet(t *testing.T) {
	if p := d.sts.Spec.PodManagementPolicy; p != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: want Parallel", p)
	}
	if s := d.sts.Spec.UpdateStrategy.Type; s != appsv1.RollingUpdateStatefulSetStrategyType {
		t.Errorf("updateStrategy %q: want RollingUpdate", s)
	}
	if !selects(t, d.sts.Spec.Selector, d.podLabels) {
		t.Error("the StatefulSet's selector does not match its pods")
	}
	if !slices.Contains(d.imageNames, d.c.Image) {
		t.Errorf("image %q is not set by the kustomization's images %v", d.c.Image, d.imageNames)
	}
}

// checkBootstrapExpect: a new cluster forms once that many pods have
// met, so it must be at least three (fault tolerant), odd, the same on
// every pod and no more than the replicas (or it would never form). It
// matters only for forming: scaling the replicas up later changes
// nothing else (newcomers join as non-voters and are promoted).
func (d *k8sDeployment) checkBootstrapExpect(t *testing.T) {
	for i, n := range d.nodes {
		if e := n.BootstrapExpect; e < 3 || e%2 == 0 || e > d.replicas || e != d.nodes[0].BootstrapExpect {
			t.Errorf("pod %s: --bootstrap-expect %d with %d replicas: want the same odd number ≥ 3 on every pod, at most the replicas", d.podName(i), e, d.replicas)
		}
	}
}

// checkPeers: each pod's node id is its name, its advertise host its
// stable DNS name, and --join the headless Service, which must publish
// pods before they are ready (they become ready only after meeting).
func (d *k8sDeployment) checkPeers(t *testing.T) {
	h := d.headless
	if h.Spec.ClusterIP != corev1.ClusterIPNone || !h.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: want clusterIP None and publishNotReadyAddresses", h.Name)
	}
	if !selects(t, &metav1.LabelSelector{MatchLabels: h.Spec.Selector}, d.podLabels) {
		t.Errorf("Service %s does not select the pods", h.Name)
	}
	ids := map[string]bool{}
	for i, n := range d.nodes {
		pod := d.podName(i)
		if n.NodeID != pod || ids[n.NodeID] {
			t.Errorf("pod %s: node id %q, want the pod name", pod, n.NodeID)
		}
		ids[n.NodeID] = true
		if want := pod + "." + h.Name + "." + d.namespace + ".svc.cluster.local"; n.AdvertiseHost != want {
			t.Errorf("pod %s: advertise host %q, want its stable DNS name %q", pod, n.AdvertiseHost, want)
		}
		svc := h.Name + "." + d.namespace
		checkJoin(t, n, []string{h.Name, svc, svc + ".svc", svc + ".svc.cluster.local"})
	}
}

// checkPorts: the container declares, and the headless Service exposes,
// every port the flags open; the client Service reaches HTTPS only.
func (d *k8sDeployment) checkPorts(t *testing.T) {
	cfg := d.nodes[0]
	httpPort := listenPort(t, cfg.HTTPAddr)
	want := []corev1.ContainerPort{
		{ContainerPort: httpPort, Protocol: corev1.ProtocolTCP},
		{ContainerPort: listenPort(t, cfg.RaftAddr), Protocol: corev1.ProtocolTCP},
		{ContainerPort: listenPort(t, cfg.GossipAddr), Protocol: corev1.ProtocolTCP},
		{ContainerPort: listenPort(t, cfg.GossipAddr), Protocol: corev1.ProtocolUDP},
	}
	exposed := map[corev1.ContainerPort]bool{}
	for _, p := range d.headless.Spec.Ports {
		target := d.containerPort(t, p.TargetPort, p.Port)
		if target != p.Port {
			t.Errorf("Service %s port %s: %d → %d; peers dial the pod's own port, keep them equal", d.headless.Name, p.Name, p.Port, target)
		}
		exposed[corev1.ContainerPort{ContainerPort: target, Protocol: p.Protocol}] = true
	}
	for _, w := range want {
		if !slices.ContainsFunc(d.c.Ports, func(p corev1.ContainerPort) bool {
			return p.ContainerPort == w.ContainerPort && p.Protocol == w.Protocol
		}) {
			t.Errorf("container does not declare %d/%s", w.ContainerPort, w.Protocol)
		}
		if !exposed[w] {
			t.Errorf("Service %s does not expose %d/%s", d.headless.Name, w.ContainerPort, w.Protocol)
		}
	}
	clients := 0
	for name, svc := range d.services {
		if svc == d.headless {
			continue
		}
		clients++
		if !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.podLabels) {
			t.Errorf("Service %s does not select the pods", name)
		}
		for _, p := range svc.Spec.Ports {
			if d.containerPort(t, p.TargetPort, p.Port) != httpPort || p.Protocol != corev1.ProtocolTCP {
				t.Errorf("client Service %s port %s: want the HTTPS port %d", name, p.Name, httpPort)
			}
		}
	}
	if clients != 1 {
		t.Errorf("want one client Service besides %s, got %d", d.headless.Name, clients)
	}
}

// checkProbes: readiness on /readyz, liveness (and start-up, if any) on
// /livez, all HTTPS (there is no plain-HTTP listener) on --http-addr's
// port, all httpGet (the image has no shell for exec probes).
func (d *k8sDeployment) checkProbes(t *testing.T) {
	httpPort := listenPort(t, d.nodes[0].HTTPAddr)
	for _, p := range []struct {
		name     string
		probe    *corev1.Probe
		path     string
		optional bool
	}{
		{"readinessProbe", d.c.ReadinessProbe, "/readyz", false},
		{"livenessProbe", d.c.LivenessProbe, "/livez", false},
		{"startupProbe", d.c.StartupProbe, "/livez", true},
	} {
		if p.probe == nil {
			if !p.optional {
				t.Errorf("%s missing", p.name)
			}
			continue
		}
		g := p.probe.HTTPGet
		if g == nil {
			t.Errorf("%s: want an httpGet", p.name)
			continue
		}
		if g.Path != p.path || g.Scheme != corev1.URISchemeHTTPS || d.containerPort(t, g.Port, 0) != httpPort {
			t.Errorf("%s: %s %s port %s, want %s HTTPS on --http-addr's port %d", p.name, g.Scheme, g.Path, g.Port.String(), p.path, httpPort)
		}
	}
}

// checkVolumes: the data and key files are where the flags say, and the
// unprivileged user can read the keys.
func (d *k8sDeployment) checkVolumes(t *testing.T) {
	for i, spec := range d.specs {
		spec.checkFiles(t, d.nodes[i])
	}
	if sc := d.pod.SecurityContext; sc != nil && sc.FSGroup != nil {
		for _, v := range d.pod.Volumes {
			if s := v.Secret; s != nil && (s.DefaultMode == nil || *s.DefaultMode&0o040 == 0) {
				t.Errorf("volume %s: want a defaultMode readable by the group (fsGroup %d)", v.Name, *sc.FSGroup)
			}
		}
	}
}

// checkShutdown: a preStop pause lets endpoints drop the pod while it
// still serves, and the grace period covers it plus arbor's own graceful
// shutdown (drain, leadership transfer, snapshot) before SIGKILL.
func (d *k8sDeployment) checkShutdown(t *testing.T) {
	lc := d.c.Lifecycle
	if lc == nil || lc.PreStop == nil || lc.PreStop.Sleep == nil || lc.PreStop.Sleep.Seconds <= 0 {
		t.Fatal("want a preStop sleep action (the image has no shell for exec)")
	}
	need := time.Duration(lc.PreStop.Sleep.Seconds)*time.Second + d.nodes[0].ShutdownTimeout + 5*time.Second
	grace := d.pod.TerminationGracePeriodSeconds
	if grace == nil || *grace < 30 || time.Duration(*grace)*time.Second < need {
		t.Errorf("terminationGracePeriodSeconds: want at least 30 s and at least preStop + --shutdown-timeout + 5 s = %s", need)
	}
}

// checkSecurity: the container runs as a non-root user, with the
// container's settings overriding the pod's as in Kubernetes.
func (d *k8sDeployment) checkSecurity(t *testing.T) {
	var nonRoot *bool
	var user *int64
	if sc := d.pod.SecurityContext; sc != nil {
		nonRoot, user = sc.RunAsNonRoot, sc.RunAsUser
	}
	if sc := d.c.SecurityContext; sc != nil {
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
	}
	if nonRoot == nil || !*nonRoot || (user != nil && *user == 0) {
		t.Error("want runAsNonRoot and a non-zero runAsUser")
	}
	// Service links would put ARBOR_SERVICE_HOST and the like (from the
	// Service named arbor) in the environment, where arbor warns about
	// every ARBOR_* variable that is not a flag.
	if l := d.pod.EnableServiceLinks; l == nil || *l {
		t.Error("want enableServiceLinks: false")
	}
}

// checkDisruption: voluntary evictions take one voter at a time, no two
// voters share a machine, and the scheduler spreads them over zones when
// it can.
func (d *k8sDeployment) checkDisruption(t *testing.T) {
	pdb := d.pdbs[0]
	if u := pdb.Spec.MaxUnavailable; u == nil || u.Type != intstr.Int || u.IntVal != 1 || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: want maxUnavailable 1 and no minAvailable, got %v and %v", u, pdb.Spec.MinAvailable)
	}
	if !selects(t, pdb.Spec.Selector, d.podLabels) {
		t.Error("the PodDisruptionBudget does not select the pods")
	}
	aa := d.pod.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatal("want required pod anti-affinity")
	}
	byHost := false
	for _, term := range aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if !selects(t, term.LabelSelector, d.podLabels) {
			t.Error("a pod anti-affinity term does not select the pods")
		}
		byHost = byHost || term.TopologyKey == "kubernetes.io/hostname"
	}
	if !byHost {
		t.Error("want required pod anti-affinity on kubernetes.io/hostname")
	}
	byZone := false
	for _, c := range d.pod.TopologySpreadConstraints {
		if c.TopologyKey == "topology.kubernetes.io/zone" && selects(t, c.LabelSelector, d.podLabels) {
			byZone = c.WhenUnsatisfiable == corev1.ScheduleAnyway
		}
	}
	if !byZone {
		t.Error("want a best-effort (ScheduleAnyway) spread of the pods over topology.kubernetes.io/zone")
	}
}

// checkSecretsDocumented: the Secrets are not in git, so deploy/README.md
// must say how to create each one.
func (d *k8sDeployment) checkSecretsDocumented(t *testing.T) {
	readme, err := os.ReadFile(manifestReadme)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range secretNames(d.pod) {
		if !strings.Contains(string(readme), "create secret generic "+name+" ") {
			t.Errorf("deploy/README.md does not show how to create the Secret %s", name)
		}
	}
}

// containerPort maps a port given by number or by container port name to
// its number; an unset port means fallback (a Service's targetPort
// defaults to its port).
func (d *k8sDeployment) containerPort(t *testing.T, p intstr.IntOrString, fallback int32) int32 {
	t.Helper()
	switch {
	case p.Type == intstr.Int && p.IntVal == 0:
		return fallback
	case p.Type == intstr.Int:
		return p.IntVal
	}
	for _, cp := range d.c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Errorf("port name %q: no such container port", p.StrVal)
	return -1
}

// k8sNode resolves the container's environment and arguments the way the
// kubelet does for pod podName in namespace ns, with placeholder values for
// Secrets.
func k8sNode(t *testing.T, sts *appsv1.StatefulSet, c corev1.Container, podName, ns string) manifestNode {
	t.Helper()
	if len(c.EnvFrom) > 0 {
		t.Fatal("envFrom: unchecked; list the variables in env")
	}
	vars := map[string]string{}
	var n manifestNode
	for _, e := range c.Env {
		v := expandKubeVars(e.Value, vars)
		if src := e.ValueFrom; src != nil {
			switch {
			case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.name":
				v = podName
			case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.namespace":
				v = ns
			case src.SecretKeyRef != nil:
				v = "manifest-test-" + src.SecretKeyRef.Key
			default:
				t.Fatalf("env %s: unchecked valueFrom %+v", e.Name, src)
			}
		}
		vars[e.Name] = v
		n.env = append(n.env, e.Name+"="+v)
	}
	for _, a := range c.Args[1:] {
		n.args = append(n.args, expandKubeVars(a, vars))
	}
	for _, s := range append(slices.Clone(n.args), n.env...) {
		if strings.Contains(s, "$(") {
			t.Errorf("%q refers to an undefined variable", s)
		}
	}
	claims := map[string]bool{}
	for _, vct := range sts.Spec.VolumeClaimTemplates {
		claims[vct.Name] = true
	}
	secrets := map[string]bool{}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		secrets[v.Name] = v.Secret != nil || secretsOnly(v.Projected)
	}
	for _, vm := range c.VolumeMounts {
		n.mounts = append(n.mounts, manifestMount{path: vm.MountPath, readOnly: vm.ReadOnly, secret: secrets[vm.Name], data: claims[vm.Name]})
	}
	return n
}

// secretsOnly reports whether a projected volume holds Secrets and
// nothing else (key material, like a Secret volume).
func secretsOnly(p *corev1.ProjectedVolumeSource) bool {
	if p == nil || len(p.Sources) == 0 {
		return false
	}
	for _, src := range p.Sources {
		if src.Secret == nil || src.ConfigMap != nil || src.DownwardAPI != nil || src.ServiceAccountToken != nil || src.ClusterTrustBundle != nil {
			return false
		}
	}
	return true
}

// expandKubeVars replaces $(NAME) with the value of a variable defined
// earlier and $$ with $, leaving unknown references as they are, like the
// kubelet does.
func expandKubeVars(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				if v, ok := vars[s[i+2:i+2+end]]; ok {
					b.WriteString(v)
					i += 2 + end
					continue
				}
			}
		}
		b.WriteByte('$')
	}
	return b.String()
}

// selects reports whether sel selects a pod with podLabels; an empty
// selector selecting everything is a mistake here.
func selects(t *testing.T, sel *metav1.LabelSelector, podLabels labels.Set) bool {
	t.Helper()
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Error(err)
		return false
	}
	return s.Matches(podLabels)
}

// secretNames lists the Secrets the pod reads, as volumes or variables.
func secretNames(pod corev1.PodSpec) []string {
	var names []string
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			names = append(names, v.Secret.SecretName)
		}
	}
	for _, c := range pod.Containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				names = append(names, e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// composeService is the part of a Compose service the checks read.
type composeService struct {
	Image           string            `json:"image"`
	Hostname        string            `json:"hostname"`
	User            string            `json:"user"`
	Command         []string          `json:"command"`
	Environment     map[string]string `json:"environment"`
	Ports           []string          `json:"ports"`
	Volumes         []string          `json:"volumes"`
	StopGracePeriod string            `json:"stop_grace_period"`
}

// composeVar is a ${NAME}, ${NAME:-default}, ${NAME-default} or
// ${NAME:?message} reference in a Compose file.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// interpolateCompose resolves the variable references of s as Compose
// would with the environment set.
func interpolateCompose(s string, set map[string]string) string {
	return composeVar.ReplaceAllStringFunc(s, func(ref string) string {
		m := composeVar.FindStringSubmatch(ref)
		if v, ok := set[m[1]]; ok && (v != "" || !strings.HasPrefix(m[2], ":")) {
			return v
		}
		if strings.HasSuffix(m[2], "-") {
			return m[3]
		}
		return ""
	})
}

// TestComposeCluster checks deploy/compose.yaml: each service is a node
// whose id, host name and advertise host are the service name, that joins
// the others and forms one cluster of them all.
func TestComposeCluster(t *testing.T) {
	var f struct {
		Services map[string]composeService `json:"services"`
	}
	readManifestYAML(t, manifestComposeFile, &f)
	// What make cluster-up sets; everything else takes the file's defaults.
	set := map[string]string{"ARBOR_ADMIN_SECRET": "manifest-test-secret", "ARBOR_UID": "1000", "ARBOR_GID": "1000"}
	names := slices.Sorted(maps.Keys(f.Services))
	if len(names) < 3 {
		t.Fatalf("services %v: want at least three nodes", names)
	}
	hostPorts := map[string]bool{}
	for _, name := range names {
		s := f.Services[name]
		t.Run(name, func(t *testing.T) {
			if len(s.Command) == 0 || s.Command[0] != "serve" {
				t.Fatalf("command %q: want serve and its flags", s.Command)
			}
			var n manifestNode
			for _, a := range s.Command[1:] {
				n.args = append(n.args, interpolateCompose(a, set))
			}
			for _, k := range slices.Sorted(maps.Keys(s.Environment)) {
				n.env = append(n.env, k+"="+interpolateCompose(s.Environment[k], set))
			}
			for _, v := range s.Volumes {
				parts := strings.Split(interpolateCompose(v, set), ":")
				if len(parts) < 2 {
					t.Fatalf("volume %q: want source:target", v)
				}
				ro := len(parts) > 2 && parts[2] == "ro"
				n.mounts = append(n.mounts, manifestMount{path: parts[1], readOnly: ro, secret: ro, data: !ro})
			}
			cfg := n.parse(t)
			if cfg.NodeID != name || cfg.AdvertiseHost != name || s.Hostname != name {
				t.Errorf("node id %q, advertise host %q, hostname %q: want the service name %q", cfg.NodeID, cfg.AdvertiseHost, s.Hostname, name)
			}
			if cfg.BootstrapExpect != len(names) {
				t.Errorf("--bootstrap-expect %d, want the number of nodes %d", cfg.BootstrapExpect, len(names))
			}
			checkJoin(t, cfg, names)
			n.checkFiles(t, cfg)
			if len(s.Ports) != 1 || !strings.HasSuffix(s.Ports[0], ":"+strconv.Itoa(int(listenPort(t, cfg.HTTPAddr)))) {
				t.Errorf("ports %q: want the HTTPS port %s published", s.Ports, cfg.HTTPAddr)
			}
			for _, p := range s.Ports {
				host := p[:max(strings.LastIndex(p, ":"), 0)]
				if hostPorts[host] {
					t.Errorf("ports %q: host port %q published twice", s.Ports, host)
				}
				hostPorts[host] = true
			}
			grace, err := time.ParseDuration(s.StopGracePeriod)
			if err != nil || grace < cfg.ShutdownTimeout+5*time.Second {
				t.Errorf("stop_grace_period %q: want at least --shutdown-timeout + 5s", s.StopGracePeriod)
			}
			if uid, _, _ := strings.Cut(interpolateCompose(s.User, map[string]string{}), ":"); uid == "0" || uid == "" || uid == "root" {
				t.Errorf("user %q: the default must not be root", s.User)
			}
		})
	}
}

// TestRecoveryPodManifest: deploy/recovery/recover-pod.yaml runs `arbor
// recover` with flags it parses, on the volume it mounts at the data
// directory, as the StatefulSet's user, without a terminal.
func TestRecoveryPodManifest(t *testing.T) {
	data, err := os.ReadFile("../../deploy/recovery/recover-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		t.Fatalf("recover-pod.yaml: %v", err)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatal("want one container, never restarted")
	}
	c := pod.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "recover" {
		t.Fatalf("args %v: want the recover command", c.Args)
	}
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		flags[name] = value
	}
	if _, ok := flags[strings.TrimPrefix(recoverAckFlag, "--")]; !ok {
		t.Error("no acknowledging flag: without a terminal, arbor recover refuses")
	}
	if _, err := cluster.ParseVoters(flags["voters"]); err != nil || flags["node-id"] == "" {
		t.Errorf("--voters %q (%v), --node-id %q", flags["voters"], err, flags["node-id"])
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim != nil && strings.HasPrefix(v.PersistentVolumeClaim.ClaimName, "data-arbor-") {
				mounted = mounted || m.MountPath == flags["data-dir"]
			}
		}
	}
	if !mounted {
		t.Error("the node's claim (data-arbor-N) is not mounted at --data-dir")
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.FSGroup == nil || *sc.FSGroup != 65532 {
		t.Error("want the StatefulSet's user and group (65532), which own the volume's files")
	}
}
