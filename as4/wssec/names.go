package wssec

// Namespaces.
const (
	nsSOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"
	nsSOAP12 = "http://www.w3.org/2003/05/soap-envelope"
	nsEbMS   = "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"
	nsWSSE   = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
	nsWSU    = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
	nsDS     = "http://www.w3.org/2000/09/xmldsig#"
	nsXENC   = "http://www.w3.org/2001/04/xmlenc#"
	nsEC     = "http://www.w3.org/2001/10/xml-exc-c14n#"
)

// Algorithm and token type URIs.
const (
	algExcC14N = "http://www.w3.org/2001/10/xml-exc-c14n#"

	algRSASHA1   = "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
	algRSASHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
	algRSASHA384 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384"
	algRSASHA512 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512"

	algSHA1   = "http://www.w3.org/2000/09/xmldsig#sha1"
	algSHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"
	algSHA384 = "http://www.w3.org/2001/04/xmldsig-more#sha384"
	algSHA512 = "http://www.w3.org/2001/04/xmlenc#sha512"

	algAttachmentContent  = "http://docs.oasis-open.org/wss/oasis-wss-SwAProfile-1.1#Attachment-Content-Signature-Transform"
	algAttachmentComplete = "http://docs.oasis-open.org/wss/oasis-wss-SwAProfile-1.1#Attachment-Complete-Signature-Transform"

	tokenX509v3    = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509v3"
	tokenPKIPath   = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509PKIPathv1"
	keyIDSKI       = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509SubjectKeyIdentifier"
	keyIDThumbSHA1 = "http://docs.oasis-open.org/wss/oasis-wss-soap-message-security-1.1#ThumbprintSHA1"
	encBase64      = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary"
)

// SOAP 1.2 roles and SOAP 1.1 actors that address the ultimate receiver.
var ultimateReceiver = map[string]bool{
	"": true,
	"http://www.w3.org/2003/05/soap-envelope/role/ultimateReceiver": true,
	"http://www.w3.org/2003/05/soap-envelope/role/next":             true,
	"http://schemas.xmlsoap.org/soap/actor/next":                    true,
}
