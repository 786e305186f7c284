package txinbox.interop;

import java.io.InputStream;

import org.w3c.dom.Node;

import com.helger.collection.commons.ICommonsList;
import com.helger.http.header.HttpHeaderMap;
import com.helger.phase4.attachment.WSS4JAttachment;
import com.helger.phase4.ebms3header.Ebms3SignalMessage;
import com.helger.phase4.ebms3header.Ebms3UserMessage;
import com.helger.phase4.error.AS4ErrorList;
import com.helger.phase4.incoming.IAS4IncomingMessageMetadata;
import com.helger.phase4.incoming.IAS4IncomingMessageState;
import com.helger.phase4.incoming.spi.AS4MessageProcessorResult;
import com.helger.phase4.incoming.spi.AS4SignalMessageProcessorResult;
import com.helger.phase4.incoming.spi.IAS4IncomingMessageProcessorSPI;
import com.helger.phase4.model.pmode.IPMode;

/**
 * The receiving side's business: prints one JSON line per user message
 * phase4 accepted (after decryption, signature verification and its
 * duplicate check), with what the test compares. Found by phase4 through
 * META-INF/services.
 */
public final class Recorder implements IAS4IncomingMessageProcessorSPI {
  public AS4MessageProcessorResult processAS4UserMessage(IAS4IncomingMessageMetadata meta, HttpHeaderMap headers,
      Ebms3UserMessage msg, IPMode pmode, Node payload, ICommonsList<WSS4JAttachment> attachments,
      IAS4IncomingMessageState state, AS4ErrorList errors) {
    StringBuilder j = new StringBuilder("{");
    Phase4Partner.field(j, "received", msg.getMessageInfo().getMessageId()).append(',');
    Phase4Partner.field(j, "conversation", msg.getCollaborationInfo().getConversationId()).append(',');
    j.append("\"signed\":").append(state.isSoapSignatureChecked()).append(',');
    j.append("\"decrypted\":").append(state.isSoapDecrypted()).append(",\"payloads\":[");
    if (attachments != null) {
      for (int i = 0; i < attachments.size(); i++) {
        try (InputStream in = attachments.get(i).getSourceStream()) {
          j.append(i > 0 ? ",\"" : "\"").append(Receiver.sha256(in.readAllBytes())).append('"');
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }
    }
    System.out.println(j.append("]}"));
    System.out.flush();
    return AS4MessageProcessorResult.createSuccess();
  }

  public AS4SignalMessageProcessorResult processAS4SignalMessage(IAS4IncomingMessageMetadata meta,
      HttpHeaderMap headers, Ebms3SignalMessage signal, IPMode pmode, IAS4IncomingMessageState state,
      AS4ErrorList errors) {
    return AS4SignalMessageProcessorResult.createSuccess();
  }

  public void processAS4ResponseMessage(IAS4IncomingMessageMetadata meta, IAS4IncomingMessageState state,
      String responseMessageID, byte[] responseBytes, boolean responsePayloadIsAvailable, AS4ErrorList errors) {
  }
}
