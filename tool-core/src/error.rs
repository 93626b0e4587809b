//! `ToolError`: what went wrong in a call, written for the model, with a kind and an operator-only source.

use std::error::Error as StdError;
use std::fmt;
use std::io;

/// The category of a tool failure. Dispatchers, hooks and provider adapters branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The model sent arguments that do not fit the tool's schema.
    InvalidArguments,
    /// Something the call refers to does not exist (a tool, a file, a reference).
    NotFound,
    /// A permission hook or policy refused the call.
    PermissionDenied,
    /// The call ran past its time limit.
    Timeout,
    /// The call was cancelled before it finished.
    Cancelled,
    /// The tool ran and failed. The default kind for errors a tool returns.
    Execution,
    /// The whole turn must stop: the only kind that escapes a batch as an error.
    Fatal,
}

impl ErrorKind {
    /// A stable snake_case name, as used in events and metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArguments => "invalid_arguments",
            ErrorKind::NotFound => "not_found",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Execution => "execution",
            ErrorKind::Fatal => "fatal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed tool call.
///
/// The `message` is what the model reads, so it should say what happened and what to do next.
/// The `source` is for the operator (logs, events) and never reaches the model.
pub struct ToolError {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl ToolError {
    /// An error of `kind` with a model-facing `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError { kind, message: message.into(), source: None }
    }

    /// The model sent arguments the tool cannot use.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArguments, message)
    }

    /// Something the call refers to does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// The call was refused by a permission policy.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }

    /// The call ran past its time limit.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }

    /// The call was cancelled.
    pub fn cancelled(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Cancelled, message)
    }

    /// The tool ran and failed.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Execution, message)
    }

    /// The whole turn must stop.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Fatal, message)
    }

    /// Converts an I/O error, mapping not-found and permission errors to their kinds.
    pub fn from_io(error: io::Error) -> Self {
        let kind = match error.kind() {
            io::ErrorKind::NotFound => ErrorKind::NotFound,
            io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
            io::ErrorKind::TimedOut => ErrorKind::Timeout,
            io::ErrorKind::InvalidInput
            | io::ErrorKind::NotADirectory
            | io::ErrorKind::IsADirectory
            | io::ErrorKind::InvalidFilename => ErrorKind::InvalidArguments,
            _ => ErrorKind::Execution,
        };
        ToolError::new(kind, error.to_string()).with_source(error)
    }

    /// Converts any displayable error into an [`ErrorKind::Execution`] error.
    pub fn from_display(error: impl fmt::Display) -> Self {
        ToolError::execution(error.to_string())
    }

    /// Converts a standard error into an [`ErrorKind::Execution`] error, keeping it as the source.
    pub fn from_std(error: impl StdError + Send + Sync + 'static) -> Self {
        ToolError::execution(error.to_string()).with_source(error)
    }

    /// Attaches an operator-only cause.
    pub fn with_source(mut self, source: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Replaces the model-facing message, keeping kind and source.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// The category of the failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The model-facing message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether this error must stop the whole turn.
    pub fn is_fatal(&self) -> bool {
        self.kind == ErrorKind::Fatal
    }

    /// The operator-only cause, if any.
    pub fn source_error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.source.as_deref()
    }

    /// The source chain as one line, for logs and operator-facing metadata.
    pub fn source_chain(&self) -> Option<String> {
        let mut current: Option<&(dyn StdError + 'static)> = self.source.as_deref().map(|e| e as _);
        let mut parts = Vec::new();
        while let Some(err) = current {
            parts.push(err.to_string());
            current = err.source();
        }
        (!parts.is_empty()).then(|| parts.join(": "))
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("source", &self.source)
            .finish()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for ToolError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

impl From<io::Error> for ToolError {
    fn from(error: io::Error) -> Self {
        ToolError::from_io(error)
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(error: serde_json::Error) -> Self {
        ToolError::from_std(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_map_to_kinds_and_keep_source() {
        let err = ToolError::from(io::Error::new(io::ErrorKind::NotFound, "no such file"));
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(err.message(), "no such file");
        assert_eq!(err.source_chain().as_deref(), Some("no such file"));
    }

    #[test]
    fn only_fatal_errors_are_fatal() {
        assert!(ToolError::fatal("stop").is_fatal());
        assert!(!ToolError::timeout("slow").is_fatal());
        assert!(!ToolError::execution("bad").is_fatal());
    }
}
