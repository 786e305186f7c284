// Package wssec is WS-Security for AS4 (OASIS WSS 1.1.1 with the SwA
// profile 1.1, as the eDelivery AS4 profile uses them): it verifies and
// decrypts incoming messages, signs and encrypts outgoing ones, and
// checks a partner's signed non-repudiation receipt.
//
//   - Verifier.Verify decrypts first (VerifyConfig.Decrypter), then checks
//     the one ds:Signature of the wsse:Security header addressed to this
//     node: RSA-SHA256 (RSA-SHA384/512; RSA-SHA1 and SHA-1 digests only
//     with AllowSHA1), exclusive C14N for SignedInfo and for every #id
//     reference, the Attachment-Content-Signature-Transform for cid:
//     references (XML attachments canonicalized as SwA §5.4.2 asks), the
//     key from a BinarySecurityToken (X509v3 or X509PKIPathv1), an
//     IssuerSerial, a SubjectKeyIdentifier or a SHA-1 thumbprint of a
//     configured partner certificate, and the certificate's validity and
//     chain against VerifyConfig.Roots.
//   - Decrypter: an xenc:EncryptedKey with RSA-OAEP (xmlenc#rsa-oaep-mgf1p,
//     xmlenc11#rsa-oaep with MGF1 over SHA-1 or SHA-256) that names this
//     node's certificate, and AES-GCM EncryptedData for attachments
//     (Attachment-Content-Only, Attachment-Complete) and SOAP elements.
//   - Signer and Encrypter write the same forms: a BinarySecurityToken,
//     RSA-SHA256 over the eb:Messaging header, the Body and each attachment;
//     AES-128-GCM attachments and an RSA-OAEP (SHA-256, MGF1 SHA-256) key.
//   - Verifier.VerifyReceipt checks that a receipt is signed by a trusted
//     partner and that its ebbp:NonRepudiationInformation repeats the
//     digests of SignedReferences.
//
// Failures are *Error values whose Code is the ebMS error to answer:
// EBMS:0101 (FailedAuthentication), EBMS:0102 (FailedDecryption), EBMS:0103
// (PolicyNoncompliance), or EBMS:0009 for an envelope that is not one.
//
// # Hostile input
//
// A signature proves only what its references point at, so the verifier
// makes sure that this is what the ebMS reader will use (XML signature
// wrapping): the envelope must have exactly one Header, one Body and one
// eb:Messaging header, which are found by their position, not by Id; the
// signature must cover exactly these two elements and every MIME part,
// each by one reference; an Id that occurs twice anywhere in the envelope
// refuses the message; references are only #id (exclusive C14N as the only
// transform) or cid: (one SwA transform); a DOCTYPE is refused. The parser
// bounds nesting (64) and the number of elements and attributes.
//
// # Why not a library
//
// The Go XML signature libraries (github.com/russellhaering/goxmldsig on
// github.com/beevik/etree is the maintained one) verify enveloped SAML
// signatures: they resolve no WS-Security token references, have no SwA
// transforms and no XML Encryption, and their DOM adds a second parser whose
// reading of the envelope may differ from the one the endpoint uses. What
// AS4 needs of XML-DSig is small: exclusive C14N (about 150 lines here,
// compared with Apache Santuario's output on tricky documents in the tests),
// one signature with references by Id, and the SwA transforms. So the
// package is built on the standard library (encoding/xml's tokenizer with
// its own namespace handling, crypto/rsa, crypto/cipher, crypto/x509); only
// PKCS#12 files are read with software.sslmate.com/src/go-pkcs12.
//
// It is tested against real signed receipts of phase4, Governikus and
// Holodeck B2B, Domibus' key stores, and Apache WSS4J 1.6 and Santuario
// (package wssectest): each verifies what the other signs, and Santuario's
// signed and encrypted attachments are decrypted and verified here.
//
// # Not supported
//
// Attachment-Complete-Signature-Transform (MIME header canonicalization;
// AS4 senders use the Content transform), inclusive C14N, XPath and
// enveloped-signature transforms, ECDSA/EdDSA and RSA-PSS signatures,
// AES-CBC and 3DES encryption, derived keys and secure conversation,
// several signatures or EncryptedKeys in one header, certificate revocation
// (CRL, OCSP), and wsu:Timestamp freshness.
package wssec
