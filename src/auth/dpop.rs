//! DPoP (RFC 9449; MCP's `io.modelcontextprotocol/auth/dpop` extension, SEP-1932): tokens
//! bound to a key pair of this client, proven with a fresh signed proof on every request.
//!
//! The key is a P-256 key pair generated once per [`OAuthConfig`](crate::config::OAuthConfig)
//! (ring), kept in memory only, never shown; its public half travels in each proof's `jwk`
//! header. A proof (`typ: dpop+jwt`, ES256) names the request's method (`htm`) and URL
//! without query or fragment (`htu`), carries a fresh `jti` and `iat`, the server's nonce when
//! it asked for one, and for a resource request the hash of the access token (`ath`).

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, Jwk,
};
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use sha2::{Digest as _, Sha256};

use super::authorizer::random_token;

/// A DPoP key pair: the private key (PKCS#8) and the public JWK.
pub(crate) struct DpopKey {
    pkcs8: Vec<u8>,
    jwk: Jwk,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DpopKey(***)")
    }
}

/// The key of one configuration, generated when first needed.
#[derive(Debug, Default)]
pub(crate) struct DpopKeySlot(OnceLock<Result<DpopKey, String>>);

impl DpopKeySlot {
    pub fn key(&self) -> Result<&DpopKey, String> {
        self.0
            .get_or_init(DpopKey::generate)
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl DpopKey {
    fn generate() -> Result<DpopKey, String> {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "generating a DPoP key failed".to_owned())?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| "reading the DPoP key failed".to_owned())?;
        // Uncompressed point: 0x04 || x (32 bytes) || y (32 bytes).
        let point = pair.public_key().as_ref();
        if point.len() != 65 || point[0] != 4 {
            return Err("unexpected DPoP public key encoding".into());
        }
        let jwk = Jwk {
            common: CommonParameters::default(),
            algorithm: AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
                key_type: EllipticCurveKeyType::EC,
                curve: EllipticCurve::P256,
                x: URL_SAFE_NO_PAD.encode(&point[1..33]),
                y: URL_SAFE_NO_PAD.encode(&point[33..65]),
            }),
        };
        Ok(DpopKey {
            pkcs8: pkcs8.as_ref().to_vec(),
            jwk,
        })
    }

    /// A proof for a `method` request to `url`; `token`: the access token it presents (a
    /// resource request), `nonce`: the server's, if it gave one.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, String> {
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut claims = serde_json::json!({
            "jti": random_token(),
            "htm": method,
            "htu": htu,
            "iat": iat,
        });
        if let Some(token) = token {
            claims["ath"] = URL_SAFE_NO_PAD
                .encode(Sha256::digest(token.as_bytes()).as_slice())
                .into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        let key = jsonwebtoken::EncodingKey::from_ec_der(&self.pkcs8);
        jsonwebtoken::encode(&header, &claims, &key)
            .map_err(|_| "signing a DPoP proof failed".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_carry_the_public_key_and_verify() {
        let slot = DpopKeySlot::default();
        let key = slot.key().unwrap();
        let proof = key
            .proof(
                "POST",
                "https://mcp.example.com/mcp?x=1#f",
                Some("tok"),
                Some("n1"),
            )
            .unwrap();
        let header = jsonwebtoken::decode_header(&proof).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        let jwk = header.jwk.expect("the public key");
        let decoding = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let claims = jsonwebtoken::decode::<serde_json::Value>(&proof, &decoding, &validation)
            .unwrap()
            .claims;
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok").as_slice())
        );
        // The same key, a fresh jti.
        let again = slot
            .key()
            .unwrap()
            .proof("POST", "https://h/mcp", None, None)
            .unwrap();
        assert_ne!(proof, again);
        let AlgorithmParameters::EllipticCurve(public) = &key.jwk.algorithm else {
            panic!("an EC key")
        };
        assert!(!format!("{slot:?}").contains(&public.x));
    }
}
