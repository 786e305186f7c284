package wssec

import (
	"crypto"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyStoreWithTwoKeys: Domibus' gateway_keystore as it ships (two
// private keys, blue_gw and red_gw), as JKS and as PKCS#12 (both written
// by JDK 17 keytool from Domibus' key stores, see testdata/README.md):
// without an alias it is refused naming both; with one, that key and its
// certificate are read, and they are the ones of the single-key stores.
func TestKeyStoreWithTwoKeys(t *testing.T) {
	blue, err := LoadPKCS12("testdata/domibus/blue_gw.p12", "test123")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"testdata/domibus/gateway_keystore.jks", "testdata/domibus/gateway_keystore.p12"} {
		_, err := LoadKeyStore(file, "test123", "")
		if err == nil || !strings.Contains(err.Error(), `"blue_gw"`) || !strings.Contains(err.Error(), `"red_gw"`) {
			t.Errorf("%s without an alias: %v", file, err)
		}
		for _, alias := range []string{"blue_gw", "RED_GW"} {
			kp, err := LoadKeyStore(file, "test123", alias)
			if err != nil {
				t.Fatalf("%s %s: %v", file, alias, err)
			}
			if cn := kp.Certificate.Subject.CommonName; !strings.EqualFold(cn, alias) {
				t.Errorf("%s %s: certificate of %q", file, alias, cn)
			}
			if _, err := NewSigner(kp.Key, kp.Certificate); err != nil {
				t.Errorf("%s %s: the key is not the certificate's: %v", file, alias, err)
			}
			if alias == "blue_gw" && (!kp.Certificate.Equal(blue.Certificate) || !kp.Key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(blue.Key.Public())) {
				t.Errorf("%s: blue_gw differs from blue_gw.p12's", file)
			}
		}
		if _, err := LoadKeyStore(file, "test123", "green_gw"); err == nil || !strings.Contains(err.Error(), `"blue_gw"`) {
			t.Errorf("%s with an unknown alias: %v", file, err)
		}
		if _, err := LoadKeyStore(file, "wrong", "blue_gw"); err == nil {
			t.Errorf("%s: a wrong password was accepted", file)
		}
	}
}

// TestKeyStoreFromKeytool: key stores keytool writes now (JKS and
// PKCS#12, an RSA and an EC key, a separate key password refused) are
// read by alias. Without keytool the test is skipped, with CI=true it
// fails (.ci/install-wss-peer installs the JDK).
func TestKeyStoreFromKeytool(t *testing.T) {
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("keytool is required in CI")
		}
		t.Skip("no keytool (install openjdk-17-jdk-headless)")
	}
	dir := t.TempDir()
	for _, typ := range []string{"jks", "pkcs12"} {
		file := filepath.Join(dir, "keys."+typ)
		for _, k := range [][]string{{"rsa-key", "RSA", "2048"}, {"ec-key", "EC", "256"}} {
			out, err := exec.Command(keytool, "-genkeypair", "-keystore", file, "-storetype", typ, "-storepass", "s3cret",
				"-keypass", "s3cret", "-alias", k[0], "-keyalg", k[1], "-keysize", k[2], "-dname", "CN="+k[0], "-validity", "2").CombinedOutput()
			if err != nil {
				t.Fatalf("keytool: %v\n%s", err, out)
			}
		}
		for _, alias := range []string{"rsa-key", "ec-key"} {
			kp, err := LoadKeyStore(file, "s3cret", alias)
			if err != nil || kp.Certificate.Subject.CommonName != alias {
				t.Fatalf("%s %s: %v", typ, alias, err)
			}
		}
	}
}
