//! JSON-RPC 2.0 error objects and the extraction of typed arguments from `params`.
//!
//! Every handler answers bad input with one of these errors instead of panicking, so the codes
//! and the wording of argument errors live in one place.

use serde_json::{json, Map, Value};

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;
pub(crate) const INTERNAL_ERROR: i64 = -32603;
pub(crate) const RESOURCE_NOT_FOUND: i64 = -32002;

pub(crate) type Args = Map<String, Value>;

pub(crate) struct RpcError {
    code: i64,
    message: String,
    /// Only the 2026-07-28 errors carry data (`-32022`'s supported versions); without it an
    /// error is written exactly as before.
    data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        let message = message.into();
        RpcError {
            code,
            message,
            data: None,
        }
    }

    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub(crate) fn code(&self) -> i64 {
        self.code
    }

    pub(crate) fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(INVALID_REQUEST, message)
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

pub(crate) type Reply = Result<Value, RpcError>;

/// `params` must be an object when present; absent or null means "no parameters".
pub(crate) fn params_of(message: &Map<String, Value>) -> Result<Args, RpcError> {
    match message.get("params") {
        None | Some(Value::Null) => Ok(Args::new()),
        Some(Value::Object(params)) => Ok(params.clone()),
        Some(_) => Err(RpcError::invalid_params("params must be an object")),
    }
}

pub(crate) fn required_str<'a>(args: &'a Args, key: &str) -> Result<&'a str, RpcError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("`{key}` must be a string")))
}

pub(crate) fn required_u64(args: &Args, key: &str) -> Result<u64, RpcError> {
    args.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| RpcError::invalid_params(format!("`{key}` must be a non-negative integer")))
}

/// An optional argument: absent or null gives `default`, a value of the wrong type is an error.
pub(crate) fn optional<T>(
    args: &Args,
    key: &str,
    default: T,
    extract: fn(&Value) -> Option<T>,
    expected: &str,
) -> Result<T, RpcError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => extract(value)
            .ok_or_else(|| RpcError::invalid_params(format!("`{key}` must be {expected}"))),
    }
}
