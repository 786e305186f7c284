package as4

// maxDepth is the deepest element nesting read anywhere in an envelope:
// SOAP Envelope, Header, eb:Messaging, eb:UserMessage and its deepest
// content are 6 levels, a WS-Security header about 10; 64 leaves room for
// payloads in the SOAP Body.
const maxDepth = 64
