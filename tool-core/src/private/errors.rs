//! Picks the conversion of a tool's error type into [`ToolError`] by autoref specialization:
//! `ToolError` as is, `io::Error` with mapped kinds, `std::error::Error` keeping its source,
//! anything `Display` as an execution error. The generated code calls
//! `(&&&ErrTag::of(&error)).__tool_error_converter()(error)` where the type is known.

use std::marker::PhantomData;

use crate::error::ToolError;

pub struct ErrTag<E>(PhantomData<E>);

impl<E> ErrTag<E> {
    pub fn of(_: &E) -> Self {
        ErrTag(PhantomData)
    }
}

pub trait ViaToolError {
    fn __tool_error_converter(&self) -> fn(ToolError) -> ToolError {
        |e| e
    }
}
impl ViaToolError for &&&ErrTag<ToolError> {}

pub trait ViaIoError {
    fn __tool_error_converter(&self) -> fn(std::io::Error) -> ToolError {
        ToolError::from_io
    }
}
impl ViaIoError for &&ErrTag<std::io::Error> {}

pub trait ViaStdError<E> {
    fn __tool_error_converter(&self) -> fn(E) -> ToolError;
}
impl<E: std::error::Error + Send + Sync + 'static> ViaStdError<E> for &ErrTag<E> {
    fn __tool_error_converter(&self) -> fn(E) -> ToolError {
        ToolError::from_std
    }
}

/// The last resort, applicable to every type so that method lookup always ends here: its bound
/// is on the method, where an unfit type gets [`ToolErrorMessage`]'s message instead of a
/// failed lookup on our tag types.
pub trait ViaDisplay<E> {
    fn __tool_error_converter(&self) -> fn(E) -> ToolError
    where
        E: ToolErrorMessage;
}
impl<E> ViaDisplay<E> for ErrTag<E> {
    fn __tool_error_converter(&self) -> fn(E) -> ToolError
    where
        E: ToolErrorMessage,
    {
        ToolError::from_display
    }
}

/// An error type a tool can return: anything `Display`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error type",
    label = "the model could not be told what went wrong",
    note = "a tool's error type must implement `Display` (the message the model reads): return `ToolError`, `std::io::Error`, any `std::error::Error`, or implement `Display` for `{Self}`"
)]
pub trait ToolErrorMessage: std::fmt::Display {}
impl<E: std::fmt::Display> ToolErrorMessage for E {}
