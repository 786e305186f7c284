package txinbox.interop;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.Charset;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import com.helger.base.io.iface.IHasInputStream;
import com.helger.http.header.HttpHeaderMap;
import com.helger.mime.IMimeType;
import com.helger.phase4.attachment.IAS4IncomingAttachmentFactory;
import com.helger.phase4.crypto.AS4CryptoFactoryInMemoryKeyStore;
import com.helger.phase4.incoming.AS4IncomingMessageMetadata;
import com.helger.phase4.incoming.AS4IncomingProfileSelectorConstant;
import com.helger.phase4.incoming.AS4IncomingReceiverConfiguration;
import com.helger.phase4.incoming.AS4RequestHandler;
import com.helger.phase4.incoming.IAS4ResponseAbstraction;
import com.helger.phase4.incoming.crypto.AS4IncomingSecurityConfiguration;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * phase4's receiving side without a servlet container: the JDK's HTTP
 * server hands each POST to phase4's AS4RequestHandler (what phase4's
 * servlet does), which decrypts, verifies, checks duplicates, calls the
 * {@link Recorder} SPI and answers with its signed receipt or an ebMS error.
 */
final class Receiver {
  private Receiver() {}

  static void run(Map<String, String> opt) throws Exception {
    AS4CryptoFactoryInMemoryKeyStore cf = Keys.factory(Phase4Partner.need(opt, "key"),
        Phase4Partner.need(opt, "cert"), Phase4Partner.need(opt, "trust").split(","));
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    server.createContext("/as4", ex -> {
      try {
        handle(cf, ex);
      } catch (Exception e) {
        System.err.println("phase4-partner: " + e);
        e.printStackTrace();
        byte[] b = ("internal error: " + e).getBytes();
        ex.sendResponseHeaders(500, b.length);
        ex.getResponseBody().write(b);
      } finally {
        ex.close();
      }
    });
    server.start();
    System.out.println("{\"listening\":\"http://127.0.0.1:" + server.getAddress().getPort() + "/as4\"}");
    System.out.flush();
    // Runs until the test closes stdin.
    while (System.in.read() >= 0) {
      // nothing
    }
    server.stop(0);
  }

  static void handle(AS4CryptoFactoryInMemoryKeyStore cf, HttpExchange ex) throws Exception {
    HttpHeaderMap headers = new HttpHeaderMap();
    for (Map.Entry<String, List<String>> h : ex.getRequestHeaders().entrySet()) {
      for (String v : h.getValue()) {
        headers.addHeader(h.getKey(), v);
      }
    }
    Response res = new Response();
    AS4IncomingMessageMetadata meta = AS4IncomingMessageMetadata.createForRequest()
        .setRemoteAddr(ex.getRemoteAddress().getAddress().getHostAddress())
        .setRemotePort(ex.getRemoteAddress().getPort());
    try (AS4RequestHandler h = new AS4RequestHandler(meta)) {
      h.setCryptoFactory(cf);
      h.setPModeResolver((id, service, action, initiator, responder, agreement, address) ->
          PModes.eDelivery(initiator, responder, address));
      h.setIncomingProfileSelector(new AS4IncomingProfileSelectorConstant(PModes.PROFILE, false));
      h.setIncomingAttachmentFactory(IAS4IncomingAttachmentFactory.DEFAULT_INSTANCE);
      h.setIncomingSecurityConfiguration(AS4IncomingSecurityConfiguration.createDefaultInstance());
      h.setIncomingReceiverConfiguration(new AS4IncomingReceiverConfiguration());
      try (InputStream in = ex.getRequestBody()) {
        h.handleRequest(in, headers, res);
      }
    }
    if (res.contentType != null) {
      ex.getResponseHeaders().add("Content-Type", res.contentType);
    }
    for (Map.Entry<String, List<String>> e : res.headers.entrySet()) {
      for (String v : e.getValue()) {
        ex.getResponseHeaders().add(e.getKey(), v);
      }
    }
    byte[] body = res.body.toByteArray();
    ex.sendResponseHeaders(res.status, body.length == 0 ? -1 : body.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(body);
    }
  }

  /** The answer phase4 builds, kept until the handler returns. */
  static final class Response implements IAS4ResponseAbstraction {
    int status = 200;
    String contentType;
    String charset;
    final Map<String, List<String>> headers = new java.util.LinkedHashMap<>();
    final ByteArrayOutputStream body = new ByteArrayOutputStream();

    public void setContent(byte[] bytes, Charset cs) {
      body.reset();
      body.writeBytes(bytes);
      charset = cs.name();
      if (contentType != null && !contentType.contains("charset")) {
        contentType += "; charset=" + charset;
      }
    }

    public void setContent(HttpHeaderMap headerMap, IHasInputStream in) {
      headerMap.forEachSingleHeader((k, v) -> headers.computeIfAbsent(k, x -> new java.util.ArrayList<>()).add(v),
          false);
      body.reset();
      try (InputStream s = in.getInputStream()) {
        s.transferTo(body);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    public void setMimeType(IMimeType mt) {
      contentType = mt.getAsString();
      if (charset != null && !contentType.contains("charset")) {
        contentType += "; charset=" + charset;
      }
    }

    public void setStatus(int code) {
      status = code;
    }
  }

  static String sha256(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }
}
