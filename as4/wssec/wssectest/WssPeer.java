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
//   swa     KEY.der CERT.pem RCPT.pem IN OUT OAEP (ATT CID TYPE)...
//                                     Santuario signs the eb:Messaging, the Body and
//                                     each attachment (SwA Attachment-Content-Signature-
//                                     Transform), then encrypts each attachment
//                                     (AES-128-GCM, Attachment-Content-Only) into ATT.enc
//                                     with the key transported by RSA-OAEP for RCPT
//                                     (OAEP "mgf1p": xmlenc#rsa-oaep-mgf1p, SHA-1;
//                                     "sha256": xmlenc11#rsa-oaep, SHA-256, MGF1 SHA-256)
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
import javax.crypto.Cipher;
import javax.crypto.KeyGenerator;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import org.apache.xml.security.encryption.EncryptedKey;
import org.apache.xml.security.encryption.XMLCipher;
import org.apache.xml.security.signature.XMLSignature;
import org.apache.xml.security.signature.XMLSignatureInput;
import org.apache.xml.security.transforms.Transform;
import org.apache.xml.security.transforms.TransformSpi;
import org.apache.xml.security.transforms.Transforms;
import org.apache.xml.security.utils.resolver.ResourceResolverContext;
import org.apache.xml.security.utils.resolver.ResourceResolverSpi;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

public class WssPeer {
    static final String EB = "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/";

    static final String WSSE = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";
    static final String WSU = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";
    static final String DS = "http://www.w3.org/2000/09/xmldsig#";
    static final String XENC = "http://www.w3.org/2001/04/xmlenc#";
    static final String XMLNS = "http://www.w3.org/2000/xmlns/";
    static final String SWA = "http://docs.oasis-open.org/wss/oasis-wss-SwAProfile-1.1#";
    static final String X509V3 = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509v3";

    public static void main(String[] args) throws Exception {
        WSSConfig.init();
        org.apache.xml.security.Init.init();
        Transform.register(SWA + "Attachment-Content-Signature-Transform", SwaContent.class);
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t");
            try {
                switch (f[0]) {
                    case "sign": System.out.println("ok " + sign(f[1], f[2], f[3], f[4])); break;
                    case "verify": System.out.println("ok " + verify(f[1], f[2])); break;
                    case "swa": System.out.println("ok " + swa(f)); break;
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

    /** SwaContent is the Attachment-Content-Signature-Transform for non-XML attachments: the octets. */
    public static class SwaContent extends TransformSpi {
        protected String engineGetURI() { return SWA + "Attachment-Content-Signature-Transform"; }
        protected XMLSignatureInput enginePerformTransform(XMLSignatureInput input, OutputStream os, Transform t) throws IOException {
            try {
                return new XMLSignatureInput(input.getBytes());
            } catch (Exception e) {
                throw new IOException(e);
            }
        }
    }

    /** CidResolver resolves cid: URIs to attachment octets. */
    static class CidResolver extends ResourceResolverSpi {
        final Map<String, byte[]> atts;
        CidResolver(Map<String, byte[]> atts) { this.atts = atts; }
        public boolean engineCanResolveURI(ResourceResolverContext c) { return c.uriToResolve != null && c.uriToResolve.startsWith("cid:"); }
        public XMLSignatureInput engineResolveURI(ResourceResolverContext c) {
            XMLSignatureInput in = new XMLSignatureInput(atts.get(c.uriToResolve.substring(4)));
            in.setSourceURI(c.uriToResolve);
            return in;
        }
    }

    static Element el(Document doc, String ns, String qname) { return doc.createElementNS(ns, qname); }

    static void setId(Element e, String id) {
        e.setAttributeNS(XMLNS, "xmlns:wsu", WSU);
        e.setAttributeNS(WSU, "wsu:Id", id);
        e.setIdAttributeNS(WSU, "Id", true);
    }

    static String swa(String[] f) throws Exception {
        PrivateKey key = KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(Files.readAllBytes(Paths.get(f[1]))));
        X509Certificate signer = cert(f[2]), rcpt = cert(f[3]);
        Document doc = read(f[4]);
        Element root = doc.getDocumentElement();
        String soapNS = root.getNamespaceURI();
        Element header = (Element) root.getElementsByTagNameNS(soapNS, "Header").item(0);
        Element body = (Element) root.getElementsByTagNameNS(soapNS, "Body").item(0);
        Element messaging = (Element) doc.getElementsByTagNameNS(EB, "Messaging").item(0);
        setId(messaging, "msg-java");
        setId(body, "body-java");
        Map<String, byte[]> atts = new LinkedHashMap<>();
        Map<String, String> types = new HashMap<>();
        for (int i = 7; i + 2 <= f.length - 1; i += 3) {
            atts.put(f[i + 1], Files.readAllBytes(Paths.get(f[i])));
            types.put(f[i + 1], f[i + 2]);
        }

        Element sec = el(doc, WSSE, "wsse:Security");
        sec.setAttributeNS(XMLNS, "xmlns:wsse", WSSE);
        sec.setAttributeNS(XMLNS, "xmlns:wsu", WSU);
        sec.setAttributeNS(soapNS, root.getPrefix() + ":mustUnderstand", "true");
        header.insertBefore(sec, header.getFirstChild());
        Element bst = el(doc, WSSE, "wsse:BinarySecurityToken");
        bst.setAttributeNS(null, "EncodingType", "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary");
        bst.setAttributeNS(null, "ValueType", X509V3);
        bst.setAttributeNS(WSU, "wsu:Id", "X509-java");
        bst.setIdAttributeNS(WSU, "Id", true);
        bst.setTextContent(Base64.getEncoder().encodeToString(signer.getEncoded()));
        sec.appendChild(bst);

        XMLSignature sig = new XMLSignature(doc, "", "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256", Canonicalizer.ALGO_ID_C14N_EXCL_OMIT_COMMENTS);
        sec.appendChild(sig.getElement());
        sig.addResourceResolver(new CidResolver(atts));
        for (String id : new String[] {"msg-java", "body-java"}) {
            Transforms t = new Transforms(doc);
            t.addTransform(Transforms.TRANSFORM_C14N_EXCL_OMIT_COMMENTS);
            sig.addDocument("#" + id, t, XMLCipher.SHA256);
        }
        for (String cid : atts.keySet()) {
            Transforms t = new Transforms(doc);
            t.addTransform(SWA + "Attachment-Content-Signature-Transform");
            sig.addDocument("cid:" + cid, t, XMLCipher.SHA256);
        }
        Element str = el(doc, WSSE, "wsse:SecurityTokenReference");
        Element ref = el(doc, WSSE, "wsse:Reference");
        ref.setAttributeNS(null, "URI", "#X509-java");
        ref.setAttributeNS(null, "ValueType", X509V3);
        str.appendChild(ref);
        sig.getKeyInfo().addUnknownElement(str);
        sig.sign(key);

        // Encrypt the attachments after signing.
        KeyGenerator kg = KeyGenerator.getInstance("AES");
        kg.init(128);
        SecretKey sk = kg.generateKey();
        boolean sha256 = f[6].equals("sha256");
        XMLCipher kc = XMLCipher.getInstance(sha256 ? XMLCipher.RSA_OAEP_11 : XMLCipher.RSA_OAEP, null, sha256 ? XMLCipher.SHA256 : null);
        kc.init(XMLCipher.WRAP_MODE, rcpt.getPublicKey());
        EncryptedKey ek = kc.encryptKey(doc, sk, sha256 ? "http://www.w3.org/2009/xmlenc11#mgf1sha256" : null, null);
        Element ekEl = kc.martial(doc, ek);
        ekEl.setAttributeNS(null, "Id", "EK-java");
        Element ki = el(doc, DS, "ds:KeyInfo");
        Element kstr = el(doc, WSSE, "wsse:SecurityTokenReference");
        Element x509 = el(doc, DS, "ds:X509Data");
        Element is = el(doc, DS, "ds:X509IssuerSerial");
        Element in = el(doc, DS, "ds:X509IssuerName");
        in.setTextContent(rcpt.getIssuerX500Principal().getName());
        Element sn = el(doc, DS, "ds:X509SerialNumber");
        sn.setTextContent(rcpt.getSerialNumber().toString());
        is.appendChild(in);
        is.appendChild(sn);
        x509.appendChild(is);
        kstr.appendChild(x509);
        ki.appendChild(kstr);
        ekEl.insertBefore(ki, ekEl.getElementsByTagNameNS(XENC, "CipherData").item(0));
        Element rl = el(doc, XENC, "xenc:ReferenceList");
        ekEl.appendChild(rl);
        sec.insertBefore(ekEl, sec.getFirstChild());
        int n = 0;
        for (int i = 7; i + 2 <= f.length - 1; i += 3) {
            String cid = f[i + 1];
            byte[] iv = new byte[12];
            new SecureRandom().nextBytes(iv);
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.ENCRYPT_MODE, sk, new GCMParameterSpec(128, iv));
            byte[] ct = c.doFinal(atts.get(cid));
            byte[] out = new byte[iv.length + ct.length];
            System.arraycopy(iv, 0, out, 0, iv.length);
            System.arraycopy(ct, 0, out, iv.length, ct.length);
            Files.write(Paths.get(f[i] + ".enc"), out);
            String id = "ED-java-" + (n++);
            Element dr = el(doc, XENC, "xenc:DataReference");
            dr.setAttributeNS(null, "URI", "#" + id);
            rl.appendChild(dr);
            Element ed = el(doc, XENC, "xenc:EncryptedData");
            ed.setAttributeNS(null, "Id", id);
            ed.setAttributeNS(null, "MimeType", types.get(cid));
            ed.setAttributeNS(null, "Type", SWA + "Attachment-Content-Only");
            Element em = el(doc, XENC, "xenc:EncryptionMethod");
            em.setAttributeNS(null, "Algorithm", "http://www.w3.org/2009/xmlenc11#aes128-gcm");
            ed.appendChild(em);
            Element cd = el(doc, XENC, "xenc:CipherData");
            Element cr = el(doc, XENC, "xenc:CipherReference");
            cr.setAttributeNS(null, "URI", "cid:" + cid);
            Element ts = el(doc, XENC, "xenc:Transforms");
            Element tr = el(doc, DS, "ds:Transform");
            tr.setAttributeNS(null, "Algorithm", SWA + "Attachment-Ciphertext-Transform");
            ts.appendChild(tr);
            cr.appendChild(ts);
            cd.appendChild(cr);
            ed.appendChild(cd);
            sec.insertBefore(ed, bst);
        }
        try (OutputStream os = new FileOutputStream(f[5])) {
            TransformerFactory.newInstance().newTransformer().transform(new DOMSource(doc), new StreamResult(os));
        }
        return "signed+encrypted";
    }
}
