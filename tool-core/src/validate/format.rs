//! Integer formats (`uint32`, `int8`, ...) checked as a custom `format` keyword.

use jsonschema::error::ValidationError;
use serde_json::Value;

use super::describe::describe_value;

/// The `format` keyword, checked for the integer formats schemars writes (`uint32`, `int8`,
/// ...): the value must be written as an integer (`10`, not `10.0`) within the type's range,
/// so what passes validation also decodes. Other formats stay annotations, as draft 2020-12
/// has them by default.
pub(super) struct IntegerFormat {
    bounds: Option<(&'static str, i128, i128)>,
}

impl IntegerFormat {
    pub(super) fn for_format(format: Option<&str>) -> Self {
        let bounds = match format {
            Some("int8") => Some(("int8", i128::from(i8::MIN), i128::from(i8::MAX))),
            Some("int16") => Some(("int16", i128::from(i16::MIN), i128::from(i16::MAX))),
            Some("int32") => Some(("int32", i128::from(i32::MIN), i128::from(i32::MAX))),
            Some("int64" | "int" | "int128") => Some(("int64", i128::from(i64::MIN), i128::from(i64::MAX))),
            Some("uint8") => Some(("uint8", 0, i128::from(u8::MAX))),
            Some("uint16") => Some(("uint16", 0, i128::from(u16::MAX))),
            Some("uint32") => Some(("uint32", 0, i128::from(u32::MAX))),
            Some("uint64" | "uint" | "uint128") => Some(("uint64", 0, i128::from(u64::MAX))),
            _ => None,
        };
        IntegerFormat { bounds }
    }

    fn problem(&self, instance: &Value) -> Option<String> {
        let (name, min, max) = self.bounds?;
        let Value::Number(number) = instance else { return None };
        let value = match (number.as_i64(), number.as_u64()) {
            (Some(n), _) => i128::from(n),
            (None, Some(n)) => i128::from(n),
            (None, None) => {
                return Some(format!(
                    "expected an integer written without a fraction or exponent, received {}",
                    describe_value(instance)
                ));
            }
        };
        if value < min {
            Some(format!(
                "must be at least {min} (the smallest {name}), received {}",
                describe_value(instance)
            ))
        } else if value > max {
            Some(format!("must be at most {max} (the largest {name}), received {}", describe_value(instance)))
        } else {
            None
        }
    }
}

impl<'i> jsonschema::Keyword<'i> for IntegerFormat {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.problem(instance) {
            Some(message) => Err(ValidationError::custom(message)),
            None => Ok(()),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.problem(instance).is_none()
    }
}
