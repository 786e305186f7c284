package txinbox.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import com.helger.base.state.EContinue;
import com.helger.phase4.CAS4;
import com.helger.phase4.model.ESoapVersion;
import com.helger.phase4.attachment.AS4OutgoingAttachment;
import com.helger.phase4.crypto.AS4CryptoFactoryInMemoryKeyStore;
import com.helger.phase4.ebms3header.Ebms3Error;
import com.helger.phase4.ebms3header.Ebms3SignalMessage;
import com.helger.phase4.messaging.http.HttpRetrySettings;
import com.helger.phase4.sender.AS4Sender;
import com.helger.phase4.sender.EAS4UserMessageSendResult;
import com.helger.phase4.sender.IAS4SignalMessageValidationResultHandler;
import com.helger.scope.mgr.ScopeManager;

/**
 * phase4 as txinbox's AS4 partner, driven by the Go test
 * (internal/interop/phase4/phase4_test.go).
 *
 * <pre>
 * send key=value...     phase4's client sends one signed, encrypted, compressed
 *                       user message and prints phase4's verdict as one JSON line
 * receive key=value...  phase4's receiving handler on an HTTP port; prints a
 *                       JSON line per user message it accepted
 * </pre>
 */
public final class Phase4Partner {
  private Phase4Partner() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      System.err.println("usage: Phase4Partner send|receive key=value...");
      System.exit(2);
    }
    Map<String, String> opt = new HashMap<>();
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      opt.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    ScopeManager.onGlobalBegin("phase4-partner");
    PModes.registerProfile();
    try {
      switch (args[0]) {
        case "send" -> System.out.println(send(opt));
        case "receive" -> Receiver.run(opt);
        default -> throw new IllegalArgumentException("unknown command " + args[0]);
      }
    } finally {
      ScopeManager.onGlobalEnd();
    }
    System.out.flush();
    System.exit(0);
  }

  static String need(Map<String, String> opt, String k) {
    String v = opt.get(k);
    if (v == null) {
      throw new IllegalArgumentException("missing " + k + "=");
    }
    return v;
  }

  /** Sends one message and returns phase4's verdict as JSON. */
  static String send(Map<String, String> opt) throws Exception {
    AS4CryptoFactoryInMemoryKeyStore cf = Keys.factory(need(opt, "key"), need(opt, "cert"),
        need(opt, "trust").split(","));
    String from = opt.getOrDefault("from", "phase4"), to = opt.getOrDefault("to", "txinbox");
    String partyType = "urn:oasis:names:tc:ebcore:partyid-type:unregistered";
    AtomicInteger retries = new AtomicInteger();
    List<String> nrr = new ArrayList<>();
    List<Ebms3SignalMessage> signals = new ArrayList<>();
    AS4OutgoingAttachment.Builder payload = AS4OutgoingAttachment.builder()
        .data(Files.readAllBytes(Path.of(need(opt, "payload")))).mimeTypeXML().compressionGZIP();
    if (opt.containsKey("content-id")) {
      payload.contentID(opt.get("content-id"));
    }
    AS4Sender.BuilderUserMessage b = AS4Sender.builderUserMessage()
        .as4ProfileID(PModes.PROFILE)
        .pmode(PModes.eDelivery(from, to, need(opt, "url")))
        .cryptoFactory(cf)
        .receiverCertificate(Keys.cert(need(opt, "peer")))
        .endpointURL(need(opt, "url"))
        .messageID(need(opt, "id"))
        .fromPartyIDType(partyType).fromPartyID(from).fromRole(CAS4.DEFAULT_INITIATOR_URL)
        .toPartyIDType(partyType).toPartyID(to).toRole(CAS4.DEFAULT_RESPONDER_URL)
        .service("urn:txinbox:interop", "urn:txinbox:interop:invoicing")
        .action("Submit")
        .agreementRef("urn:as4:agreement")
        .conversationID(need(opt, "conversation"))
        .payload(payload)
        .httpRetrySettings(new HttpRetrySettings()
            .setMaxRetries(Integer.parseInt(opt.getOrDefault("retries", "0")))
            .setDurationBeforeRetry(Duration.ofMillis(200)))
        .retryCallback((id, url, n, max, ms, ex) -> {
          retries.incrementAndGet();
          System.err.println("phase4-partner: retry " + n + "/" + max + " of " + id + " after " + ex);
          return EContinue.CONTINUE;
        })
        .signalMsgConsumer((sig, meta, state) -> signals.add(sig))
        .signalMsgValidationResultHdl(new IAS4SignalMessageValidationResultHandler() {
          public void onSuccess() {
            nrr.add("success");
          }

          public void onError(String msg) {
            nrr.add("error: " + msg);
          }

          public void onNotApplicable() {
            nrr.add("not applicable");
          }
        });
    if ("1.1".equals(opt.get("soap"))) {
      b.soapVersion(ESoapVersion.SOAP_11);
    }
    if (opt.containsKey("timestamp")) {
      b.sendingDateTime(OffsetDateTime.parse(opt.get("timestamp")));
    }
    EAS4UserMessageSendResult res = b.sendMessageAndCheckForReceipt(
        ex -> System.err.println("phase4-partner: " + ex));
    StringBuilder j = new StringBuilder("{");
    field(j, "result", res.name()).append(',');
    j.append("\"retries\":").append(retries.get()).append(',');
    field(j, "nrr", String.join("; ", nrr));
    if (!signals.isEmpty()) {
      Ebms3SignalMessage s = signals.get(signals.size() - 1);
      j.append(',');
      field(j, "signalId", s.getMessageInfo().getMessageId()).append(',');
      field(j, "refTo", s.getMessageInfo().getRefToMessageId()).append(',');
      j.append("\"receipt\":").append(s.getReceipt() != null).append(",\"errors\":[");
      for (int i = 0; i < s.getErrorCount(); i++) {
        Ebms3Error e = s.getErrorAtIndex(i);
        if (i > 0) {
          j.append(',');
        }
        j.append('"').append(esc(e.getErrorCode())).append('"');
      }
      j.append(']');
    }
    return j.append('}').toString();
  }

  static StringBuilder field(StringBuilder j, String k, String v) {
    return j.append('"').append(k).append("\":\"").append(esc(v == null ? "" : v)).append('"');
  }

  static String esc(String s) {
    StringBuilder b = new StringBuilder();
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.toString();
  }
}
