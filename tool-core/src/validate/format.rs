//! Integer formats (`uint32`, `int8`, ...) checked as assertions of the `format` keyword.

use serde_json::Value;

use super::describe::describe_value;

/// The `format` keyword, checked for the integer formats schemars writes (`uint32`, `int8`,
/// ...): the value must be written as an integer (`10`, not `10.0`) within the type's range,
/// so what passes validation also decodes. Other formats stay annotations, as draft 2020-12
/// has them by default.
pub(super) struct IntegerFormat {
    bounds: (&'static str, i128, i128),
}

impl IntegerFormat {
    /// The check for `format`, when it is an integer format (others are annotations).
    pub(super) fn for_format(format: &str) -> Option<Self> {
        let bounds = match format {
            "int8" => ("int8", i128::from(i8::MIN), i128::from(i8::MAX)),
            "int16" => ("int16", i128::from(i16::MIN), i128::from(i16::MAX)),
            "int32" => ("int32", i128::from(i32::MIN), i128::from(i32::MAX)),
            "int64" | "int" | "int128" => ("int64", i128::from(i64::MIN), i128::from(i64::MAX)),
            "uint8" => ("uint8", 0, i128::from(u8::MAX)),
            "uint16" => ("uint16", 0, i128::from(u16::MAX)),
            "uint32" => ("uint32", 0, i128::from(u32::MAX)),
            "uint64" | "uint" | "uint128" => ("uint64", 0, i128::from(u64::MAX)),
            _ => return None,
        };
        Some(IntegerFormat { bounds })
    }

    /// What is wrong with `instance` for this format, if anything (only numbers are checked).
    pub(super) fn problem(&self, instance: &Value) -> Option<String> {
        let (name, min, max) = self.bounds;
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
