package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// manifestCertManagerDir is the overlay that takes the node certificate
// from cert-manager.
const manifestCertManagerDir = "../../deploy/cert-manager"

// certManagerOverlay is the part of the overlay's kustomization the test
// reads.
type certManagerOverlay struct {
	Namespace string   `json:"namespace"`
	Resources []string `json:"resources"`
	Patches   []struct {
		Target struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"target"`
		Patch string `json:"patch"`
	} `json:"patches"`
}

// certManagerCertificate is the part of a cert-manager Certificate the
// test reads.
type certManagerCertificate struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		SecretName  string   `json:"secretName"`
		DNSNames    []string `json:"dnsNames"`
		IPAddresses []string `json:"ipAddresses"`
		Usages      []string `json:"usages"`
		IssuerRef   struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		} `json:"issuerRef"`
	} `json:"spec"`
}

// TestCertManagerOverlay applies deploy/cert-manager's patch to the base
// StatefulSet, as kustomize would, and checks that every pod's settings
// pass arbor's validation with cert-manager's file names, that the
// mounted Secret is the one the Certificate writes, and that the
// Certificate is valid for every pod's advertise host and for the client
// Service (checked with a real certificate carrying its names).
func TestCertManagerOverlay(t *testing.T) {
	base := loadK8sDeployment(t)
	var overlay certManagerOverlay
	readManifestYAML(t, filepath.Join(manifestCertManagerDir, "kustomization.yaml"), &overlay)
	if overlay.Namespace != base.namespace || !slices.Contains(overlay.Resources, "../k8s") || !slices.Contains(overlay.Resources, "certificate.yaml") {
		t.Fatalf("overlay: namespace %q, resources %q; want %q, ../k8s and certificate.yaml", overlay.Namespace, overlay.Resources, base.namespace)
	}
	if len(overlay.Patches) != 1 || overlay.Patches[0].Target.Kind != "StatefulSet" || overlay.Patches[0].Target.Name != base.sts.Name {
		t.Fatalf("want one patch of StatefulSet %s, got %+v", base.sts.Name, overlay.Patches)
	}
	sts := patchStatefulSet(t, filepath.Join(manifestK8sDir, "statefulset.yaml"), overlay.Patches[0].Patch)

	cert := readCertificate(t, filepath.Join(manifestCertManagerDir, "certificate.yaml"))
	leaf := certificateFor(t, cert)
	var projected []string
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Projected != nil {
			if m := v.Projected.DefaultMode; m == nil || *m != 0o440 {
				t.Errorf("volume %s: defaultMode %v, want 0440 (group-readable keys)", v.Name, m)
			}
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					projected = append(projected, src.Secret.Name)
				}
			}
		}
	}
	if !slices.Contains(projected, cert.Spec.SecretName) {
		t.Errorf("the pods mount the Secrets %q, not the Certificate's %q", projected, cert.Spec.SecretName)
	}

	c := sts.Spec.Template.Spec.Containers[0]
	for i := range int(*sts.Spec.Replicas) + 2 { // and two more pods, as after a scale-up
		pod := fmt.Sprintf("%s-%d", sts.Name, i)
		node := k8sNode(t, sts, c, pod, base.namespace)
		cfg := node.parse(t)
		dir := path.Dir(cfg.TLSCA)
		for flagName, want := range map[string]string{
			"--tls-cert": "tls.crt", "--tls-key": "tls.key", "--tls-ca": "ca.crt", "--gossip-key": "gossip.key",
		} {
			got := map[string]string{"--tls-cert": cfg.TLSCert, "--tls-key": cfg.TLSKey, "--tls-ca": cfg.TLSCA, "--gossip-key": gossipKeyFlag(cfg)}[flagName]
			if m, ok := node.mountOf(got); !ok || !m.secret || !m.readOnly || got != path.Join(dir, want) {
				t.Errorf("%s: %s %s: want %s in a read-only mount of Secrets only", pod, flagName, got, path.Join(dir, want))
			}
		}
		if err := leaf.VerifyHostname(cfg.AdvertiseHost); err != nil {
			t.Errorf("%s: the Certificate does not name the advertise host: %v", pod, err)
		}
	}
	for name, svc := range base.services {
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			continue
		}
		if err := leaf.VerifyHostname(name + "." + base.namespace + ".svc"); err != nil {
			t.Errorf("the Certificate does not name the client Service %s: %v", name, err)
		}
	}
	for _, u := range []string{"server auth", "client auth"} {
		if !slices.Contains(cert.Spec.Usages, u) {
			t.Errorf("Certificate usages %q lack %q (nodes present it to each other)", cert.Spec.Usages, u)
		}
	}

	readme, err := os.ReadFile(manifestReadme)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"create secret generic " + projectedGossipSecret(t, projected, cert), "create secret tls " + cert.Spec.IssuerRef.Name + " "} {
		if !strings.Contains(string(readme), secret) {
			t.Errorf("deploy/README.md does not show %q", secret)
		}
	}
}

// projectedGossipSecret is the mounted Secret that is not cert-manager's.
func projectedGossipSecret(t *testing.T, projected []string, cert certManagerCertificate) string {
	t.Helper()
	others := slices.DeleteFunc(slices.Clone(projected), func(s string) bool { return s == cert.Spec.SecretName })
	if len(others) != 1 {
		t.Fatalf("projected Secrets %q: want cert-manager's and one for the gossip key", projected)
	}
	return others[0] + " "
}

// patchStatefulSet applies a JSON patch (RFC 6902, in YAML) to the
// StatefulSet in file and decodes the result strictly.
func patchStatefulSet(t *testing.T, file, patch string) *appsv1.StatefulSet {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if err := yaml.Unmarshal([]byte(patch), &ops); err != nil {
		t.Fatalf("patch: %v", err)
	}
	for _, op := range ops {
		if err := applyJSONPatchOp(doc, op.Op, op.Path, op.Value); err != nil {
			t.Fatalf("patch %s %s: %v", op.Op, op.Path, err)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(out, &sts); err != nil {
		t.Fatalf("patched StatefulSet: %v", err)
	}
	return &sts
}

// applyJSONPatchOp applies one test or replace operation in place; the
// overlay needs no others, and a new one must be taught here first.
func applyJSONPatchOp(doc any, op, pointer string, value any) error {
	parts := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	parent, last := doc, parts[len(parts)-1]
	for _, p := range parts[:len(parts)-1] {
		next, err := jsonChild(parent, p)
		if err != nil {
			return err
		}
		parent = next
	}
	cur, err := jsonChild(parent, last)
	if err != nil {
		return err
	}
	// Values compare as JSON does (numbers as float64), so round-trip.
	vj, err := json.Marshal(value)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(vj, &v); err != nil {
		return err
	}
	switch op {
	case "test":
		if !reflect.DeepEqual(cur, v) {
			return fmt.Errorf("test failed: have %v, want %v", cur, v)
		}
	case "replace":
		switch p := parent.(type) {
		case map[string]any:
			p[last] = v
		case []any:
			i, _ := strconv.Atoi(last)
			p[i] = v
		}
	default:
		return fmt.Errorf("operation %q not supported by this test", op)
	}
	return nil
}

// jsonChild follows one JSON pointer segment.
func jsonChild(v any, seg string) (any, error) {
	seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
	switch n := v.(type) {
	case map[string]any:
		c, ok := n[seg]
		if !ok {
			return nil, fmt.Errorf("no member %q", seg)
		}
		return c, nil
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(n) {
			return nil, fmt.Errorf("no element %q", seg)
		}
		return n[i], nil
	}
	return nil, fmt.Errorf("%q: not an object or array", seg)
}

// readCertificate finds the Certificate in a multi-document file and
// requires its Issuer beside it.
func readCertificate(t *testing.T, file string) certManagerCertificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cert certManagerCertificate
	issuers := map[string]bool{}
	for _, doc := range splitYAMLDocuments(data) {
		var c certManagerCertificate
		if err := yaml.Unmarshal(doc, &c); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		switch c.Kind {
		case "Certificate":
			cert = c
		case "Issuer":
			issuers[c.Metadata.Name] = true
		}
	}
	if cert.Spec.SecretName == "" || !issuers[cert.Spec.IssuerRef.Name] || cert.Spec.IssuerRef.Kind != "Issuer" {
		t.Fatalf("%s: want a Certificate with a secretName and the Issuer it names; got %+v, issuers %v", file, cert, issuers)
	}
	return cert
}

// certificateFor makes a throwaway certificate with the Certificate's
// names, so host names are matched by crypto/x509's own rules
// (wildcards included).
func certificateFor(t *testing.T, c certManagerCertificate) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: testSerial(t),
		Subject:      pkix.Name{CommonName: c.Metadata.Name},
		DNSNames:     c.Spec.DNSNames,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	for _, ip := range c.Spec.IPAddresses {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}
