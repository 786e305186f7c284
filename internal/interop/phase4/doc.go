// Package phase4 holds the interoperability tests of txinbox's AS4 endpoint
// and client against phase4 (com.helger.phase4), a live AS4 partner: the
// Maven project beside this file (pom.xml, src/main/java) is built by
// .ci/build-phase4 and run by the tests as a separate JVM, which sends to
// `txinbox serve` and receives from txinbox's client, and judges the
// answers itself. See docs/as4.md, "Interoperability with phase4".
package phase4
