package txinbox.interop;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;

import com.helger.phase4.crypto.AS4CryptoFactoryInMemoryKeyStore;

/**
 * The key material the Go test writes (wssectest.WriteFiles: a PKCS#8 DER
 * key, PEM certificates), turned into the in-memory key and trust stores
 * phase4's crypto factory reads.
 */
final class Keys {
  static final String ALIAS = "phase4";
  static final char[] PASSWORD = "test".toCharArray();

  private Keys() {}

  static X509Certificate cert(String file) throws IOException, GeneralSecurityException {
    try (InputStream in = new FileInputStream(file)) {
      return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
  }

  /**
   * A crypto factory with our key (signing, decryption) and a trust store
   * holding the given certificates (the partner's and its CA).
   */
  static AS4CryptoFactoryInMemoryKeyStore factory(String keyFile, String certFile, String... trusted)
      throws IOException, GeneralSecurityException {
    PrivateKey key = KeyFactory.getInstance("RSA")
        .generatePrivate(new PKCS8EncodedKeySpec(Files.readAllBytes(Path.of(keyFile))));
    KeyStore ks = KeyStore.getInstance("PKCS12");
    ks.load(null, null);
    ks.setKeyEntry(ALIAS, key, PASSWORD, new Certificate[] {cert(certFile)});
    KeyStore ts = KeyStore.getInstance("PKCS12");
    ts.load(null, null);
    for (int i = 0; i < trusted.length; i++) {
      ts.setCertificateEntry("trusted-" + i, cert(trusted[i]));
    }
    return new AS4CryptoFactoryInMemoryKeyStore(ks, ALIAS, PASSWORD, ts);
  }
}
