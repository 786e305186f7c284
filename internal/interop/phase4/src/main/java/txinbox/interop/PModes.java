package txinbox.interop;

import com.helger.base.state.ETriState;
import com.helger.phase4.CAS4;
import com.helger.phase4.crypto.ECryptoAlgorithmCrypt;
import com.helger.phase4.crypto.ECryptoAlgorithmSign;
import com.helger.phase4.crypto.ECryptoAlgorithmSignDigest;
import com.helger.phase4.model.EMEP;
import com.helger.phase4.model.EMEPBinding;
import com.helger.phase4.model.pmode.PMode;
import com.helger.phase4.model.pmode.PModeParty;
import com.helger.phase4.model.pmode.PModePayloadService;
import com.helger.phase4.model.pmode.PModeReceptionAwareness;
import com.helger.phase4.model.pmode.leg.EPModeSendReceiptReplyPattern;
import com.helger.phase4.model.pmode.leg.PModeLeg;
import com.helger.phase4.model.pmode.leg.PModeLegBusinessInformation;
import com.helger.phase4.model.pmode.leg.PModeLegErrorHandling;
import com.helger.phase4.model.pmode.leg.PModeLegProtocol;
import com.helger.phase4.model.pmode.leg.PModeLegReliability;
import com.helger.phase4.model.pmode.leg.PModeLegSecurity;
import com.helger.phase4.model.pmode.leg.PModeAddressList;
import com.helger.phase4.attachment.EAS4CompressionMode;
import com.helger.phase4.wss.EWSSVersion;
import com.helger.phase4.mgr.MetaAS4Manager;
import com.helger.phase4.model.pmode.IPModeIDProvider;
import com.helger.phase4.profile.AS4Profile;
import com.helger.phase4.profile.IAS4ProfileValidator;

/**
 * The one-way push P-Mode of the eDelivery AS4 profile as phase4 uses it:
 * RSA-SHA256 signatures, AES-128-GCM encryption, gzip-compressed payloads,
 * a signed non-repudiation receipt on the HTTP response.
 */
final class PModes {
  /** The AS4 profile both commands use: this P-Mode, no extra validation. */
  static final String PROFILE = "txinbox-interop";

  private PModes() {}

  /** Registers {@link #PROFILE}; after the global scope began. */
  static void registerProfile() {
    MetaAS4Manager.getProfileMgr().registerProfile(new AS4Profile(PROFILE, "txinbox interop (eDelivery AS4)",
        () -> new IAS4ProfileValidator() {}, PModes::eDelivery, IPModeIDProvider.DEFAULT_DYNAMIC, false, false));
  }

  static PMode eDelivery(String initiator, String responder, String address) {
    PModeLegSecurity sec = new PModeLegSecurity();
    sec.setWSSVersion(EWSSVersion.WSS_111);
    sec.setX509SignatureAlgorithm(ECryptoAlgorithmSign.RSA_SHA_256);
    sec.setX509SignatureHashFunction(ECryptoAlgorithmSignDigest.DIGEST_SHA_256);
    sec.setX509EncryptionAlgorithm(ECryptoAlgorithmCrypt.AES_128_GCM);
    sec.setX509EncryptionMinimumStrength(128);
    sec.setPModeAuthorize(false);
    sec.setSendReceipt(true);
    sec.setSendReceiptNonRepudiation(true);
    sec.setSendReceiptReplyPattern(EPModeSendReceiptReplyPattern.RESPONSE);
    PModeLeg leg = new PModeLeg(PModeLegProtocol.createForDefaultSoapVersion(address),
        PModeLegBusinessInformation.create(null, CAS4.DEFAULT_ACTION_URL, null, CAS4.DEFAULT_MPC_ID),
        new PModeLegErrorHandling((PModeAddressList) null, (PModeAddressList) null, ETriState.TRUE,
            ETriState.TRUE, ETriState.TRUE, ETriState.TRUE),
        (PModeLegReliability) null, sec);
    PModeParty from = PModeParty.createSimple(initiator, CAS4.DEFAULT_INITIATOR_URL);
    PModeParty to = PModeParty.createSimple(responder, CAS4.DEFAULT_RESPONDER_URL);
    return new PMode(initiator + "-" + responder, from, to, "urn:as4:agreement", EMEP.ONE_WAY,
        EMEPBinding.PUSH, leg, (PModeLeg) null, new PModePayloadService(EAS4CompressionMode.GZIP),
        PModeReceptionAwareness.createDefault());
  }
}
