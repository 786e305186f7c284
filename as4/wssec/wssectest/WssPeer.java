// WssPeer is the independent WS-Security stack of the wssec tests:
// Apache WSS4J 1.6 and Apache Santuario (Debian libwss4j-java,
// libxml-security-java). One JVM runs every command of a command file,
// one command a line, fields separated by tabs, and prints one result line
// per command ("ok ..." or "error ...").
//
//   sign    KEY.der CERT.pem IN OUT   WSS4J signs the SOAP Body and eb:Messaging
//                                     (BST X509v3, RSA-SHA256, exc-c14n, SHA-256)
//   verify  CA.pem IN                 WSS4J verifies IN's signature, the signer
//                                     trusted through CA; prints the signed elements
//   c14n    IN OUT                    Santuario exclusive C14N of a whole document
import java.io.*;
import java.nio.file.*;
import java.security.*;
import java.security.cert.*;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.*;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;
import org.apache.ws.security.*;
import org.apache.ws.security.components.crypto.Merlin;
import org.apache.ws.security.message.WSSecHeader;
import org.apache.ws.security.message.WSSecSignature;
import org.apache.xml.security.c14n.Canonicalizer;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

public class WssPeer {
    static final String EB = "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/";

    public static void main(String[] args) throws Exception {
        WSSConfig.init();
        org.apache.xml.security.Init.init();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t");
            try {
                switch (f[0]) {
                    case "sign": System.out.println("ok " + sign(f[1], f[2], f[3], f[4])); break;
                    case "verify": System.out.println("ok " + verify(f[1], f[2])); break;
                    case "c14n":
                        Canonicalizer c = Canonicalizer.getInstance(Canonicalizer.ALGO_ID_C14N_EXCL_OMIT_COMMENTS);
                        Files.write(Paths.get(f[2]), c.canonicalize(Files.readAllBytes(Paths.get(f[1]))));
                        System.out.println("ok");
                        break;
                    default: System.out.println("error unknown command " + f[0]);
                }
            } catch (Exception e) {
                System.out.println("error " + String.valueOf(e).replace('\n', ' '));
            }
        }
    }

    static Document read(String file) throws Exception {
        DocumentBuilderFactory dbf = DocumentBuilderFactory.newInstance();
        dbf.setNamespaceAware(true);
        return dbf.newDocumentBuilder().parse(new File(file));
    }

    static X509Certificate cert(String pem) throws Exception {
        try (InputStream in = new FileInputStream(pem)) {
            return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
    }

    static String sign(String keyFile, String certFile, String in, String out) throws Exception {
        PrivateKey key = KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(Files.readAllBytes(Paths.get(keyFile))));
        KeyStore ks = KeyStore.getInstance("JKS");
        ks.load(null, null);
        ks.setKeyEntry("signer", key, "pw".toCharArray(), new java.security.cert.Certificate[] {cert(certFile)});
        Merlin crypto = new Merlin();
        crypto.setKeyStore(ks);

        Document doc = read(in);
        WSSecHeader header = new WSSecHeader();
        header.setMustUnderstand(true);
        header.insertSecurityHeader(doc);
        WSSecSignature sig = new WSSecSignature();
        sig.setUserInfo("signer", "pw");
        sig.setKeyIdentifierType(WSConstants.BST_DIRECT_REFERENCE);
        sig.setSignatureAlgorithm("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256");
        sig.setDigestAlgo(WSConstants.SHA256);
        sig.setSigCanonicalization(WSConstants.C14N_EXCL_OMIT_COMMENTS);
        String soapNS = doc.getDocumentElement().getNamespaceURI();
        List<WSEncryptionPart> parts = new ArrayList<>();
        parts.add(new WSEncryptionPart("Messaging", EB, ""));
        parts.add(new WSEncryptionPart("Body", soapNS, ""));
        sig.setParts(parts);
        sig.build(doc, crypto, header);
        try (OutputStream os = new FileOutputStream(out)) {
            TransformerFactory.newInstance().newTransformer().transform(new DOMSource(doc), new StreamResult(os));
        }
        return "signed";
    }

    static String verify(String caFile, String in) throws Exception {
        KeyStore ts = KeyStore.getInstance("JKS");
        ts.load(null, null);
        ts.setCertificateEntry("ca", cert(caFile));
        Merlin crypto = new Merlin();
        crypto.setTrustStore(ts);
        Document doc = read(in);
        WSSecurityEngine engine = new WSSecurityEngine();
        List<WSSecurityEngineResult> results = engine.processSecurityHeader(doc, null, null, crypto);
        if (results == null) throw new IllegalStateException("no security header");
        TreeSet<String> signed = new TreeSet<>();
        for (WSSecurityEngineResult r : results) {
            if (((Integer) r.get(WSSecurityEngineResult.TAG_ACTION)) != WSConstants.SIGN) continue;
            X509Certificate c = (X509Certificate) r.get(WSSecurityEngineResult.TAG_X509_CERTIFICATE);
            if (c == null) throw new IllegalStateException("signature without a certificate");
            @SuppressWarnings("unchecked")
            List<WSDataRef> refs = (List<WSDataRef>) r.get(WSSecurityEngineResult.TAG_DATA_REF_URIS);
            for (WSDataRef ref : refs) {
                signed.add(ref.getName().getLocalPart() + "(" + ref.getAlgorithm() + "," + ref.getDigestAlgorithm() + ")");
            }
        }
        if (signed.isEmpty()) throw new IllegalStateException("nothing signed");
        return String.join(" ", signed);
    }
}
