//! Numbers compared as JSON has them: integers exactly, `1.0` equal to `1`, and `multipleOf`
//! decided on the decimal digits as written (`0.0075` is a multiple of `0.0001`, which binary
//! floating point division does not say).

use std::cmp::Ordering;

use serde_json::{Number, Value};

/// `a` compared with `b` by value, an integer with a float exactly (`9007199254740993` is
/// greater than `9007199254740992.0`, which a conversion to float would call equal); `None`
/// only for a NaN, which JSON cannot write.
pub(super) fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    match (exact(a), exact(b)) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        (Some(a), None) => with_float(a, b.as_f64()?),
        (None, Some(b)) => with_float(b, a.as_f64()?).map(Ordering::reverse),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// The integer `i` (an `i64` or a `u64`) compared with the float `f`, exactly.
fn with_float(i: i128, f: f64) -> Option<Ordering> {
    // Past 2^64 in size, the float is beyond every integer `exact` gives.
    const BEYOND: f64 = 18_446_744_073_709_551_616.0;
    if f.is_nan() {
        return None;
    }
    if f.abs() >= BEYOND {
        return Some(if f > 0.0 { Ordering::Less } else { Ordering::Greater });
    }
    let whole = f.trunc();
    // Exact: `whole` is an integer smaller than 2^64 in size.
    Some(i.cmp(&(whole as i128)).then(if f > whole {
        Ordering::Less
    } else if f < whole {
        Ordering::Greater
    } else {
        Ordering::Equal
    }))
}

/// Whether the number has no fractional part (`1` and `1.0`, as draft 2020-12's `integer`).
pub(super) fn is_integer(n: &Number) -> bool {
    exact(n).is_some() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// Whether `value` is a multiple of `divisor` (which is positive).
pub(super) fn is_multiple_of(value: &Number, divisor: &Number) -> bool {
    if let (Some(v), Some(d)) = (exact(value), exact(divisor)) {
        return d != 0 && v % d == 0;
    }
    if let (Some((vm, ve)), Some((dm, de))) = (decimal(value), decimal(divisor)) {
        // value = vm * 10^ve, divisor = dm * 10^de.
        if dm == 0 {
            return false;
        }
        if vm == 0 {
            return true;
        }
        return if ve >= de {
            // value / divisor = vm * 10^(ve - de) / dm: the remainder of vm * 10^k by dm.
            let mut remainder = vm % dm;
            for _ in 0..(ve - de) {
                if remainder == 0 {
                    break;
                }
                remainder = times_ten_mod(remainder, dm);
            }
            remainder == 0
        } else {
            // value / divisor = vm / (dm * 10^(de - ve)); a divisor past u128 is larger than vm.
            match u32::try_from(de - ve)
                .ok()
                .and_then(|k| 10u128.checked_pow(k))
                .and_then(|p| p.checked_mul(dm))
            {
                Some(d) => vm % d == 0,
                None => false,
            }
        };
    }
    match (value.as_f64(), divisor.as_f64()) {
        (Some(v), Some(d)) => {
            let quotient = v / d;
            quotient.is_finite() && quotient.fract() == 0.0
        }
        _ => false,
    }
}

/// `(r * 10) % m` for `r < m`, without overflowing `u128`.
fn times_ten_mod(r: u128, m: u128) -> u128 {
    if let Some(product) = r.checked_mul(10) {
        return product % m;
    }
    // Ten additions, each reduced: a + b mod m for a, b < m.
    let add = |a: u128, b: u128| if a >= m - b { a - (m - b) } else { a + b };
    (0..10).fold(0, |sum, _| add(sum, r))
}

/// JSON equality: numbers by value, objects whatever their key order.
pub(super) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => compare(a, b) == Some(Ordering::Equal),
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| equal(a, b)),
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter().all(|(key, value)| b.get(key).is_some_and(|other| equal(value, other)))
        }
        _ => a == b,
    }
}

/// A text equal for values [`equal`] takes as equal: numbers in one spelling, keys sorted.
pub(super) fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Number(n) => match (exact(n), n.as_f64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e30 => out.push_str(&(f as i128).to_string()),
            _ => out.push_str(&n.to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for item in items {
                canonical(item, out);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for key in keys {
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
                out.push(',');
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The value as an integer, when it is written as one.
fn exact(n: &Number) -> Option<i128> {
    n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))
}

/// `(mantissa, exponent)` with value = mantissa * 10^exponent, from the number's shortest
/// decimal spelling; the sign is dropped (multiples do not care).
fn decimal(n: &Number) -> Option<(u128, i32)> {
    let text = n.to_string();
    let text = text.trim_start_matches('-');
    let (digits, exponent) = match text.split_once(['e', 'E']) {
        Some((digits, exponent)) => (digits, exponent.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let fraction = fraction.trim_end_matches('0');
    if whole.len() + fraction.len() > 38 {
        return None;
    }
    let mantissa: u128 = format!("{whole}{fraction}").parse().ok()?;
    let exponent = exponent.checked_sub(i32::try_from(fraction.len()).ok()?)?;
    Some((mantissa, exponent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn number(v: Value) -> Number {
        match v {
            Value::Number(n) => n,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn multiples_are_decided_on_decimal_digits() {
        let yes = [
            (json!(0.0075), json!(0.0001)),
            (json!(4.5), json!(1.5)),
            (json!(10), json!(2)),
            (json!(1e-7), json!(1e-8)),
            (json!(12), json!(0.5)),
            (json!(-9), json!(3)),
        ];
        for (v, d) in yes {
            assert!(is_multiple_of(&number(v.clone()), &number(d.clone())), "{v} of {d}");
        }
        let no = [
            (json!(0.00751), json!(0.0001)),
            (json!(35), json!(1.5)),
            (json!(7), json!(2)),
            (json!(1e308), json!(0.123456789)),
        ];
        for (v, d) in no {
            assert!(!is_multiple_of(&number(v.clone()), &number(d.clone())), "{v} of {d}");
        }
    }

    #[test]
    fn integers_compare_exactly_and_floats_by_value() {
        assert_eq!(compare(&number(json!(u64::MAX)), &number(json!(i64::MIN))), Some(Ordering::Greater));
        assert_eq!(compare(&number(json!(1.0)), &number(json!(1))), Some(Ordering::Equal));
        assert!(is_integer(&number(json!(1.0))) && !is_integer(&number(json!(1.5))));
        assert!(equal(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        // Past 2^53 an integer and a float are compared exactly.
        let big = number(json!(9_007_199_254_740_993_u64));
        let float = number(serde_json::from_str("9007199254740992.0").unwrap());
        assert_eq!(compare(&big, &float), Some(Ordering::Greater));
        assert_eq!(compare(&float, &big), Some(Ordering::Less));
        assert_eq!(compare(&number(json!(-3)), &number(json!(-2.5))), Some(Ordering::Less));
        assert_eq!(compare(&number(json!(-2)), &number(json!(-2.5))), Some(Ordering::Greater));
        assert_eq!(compare(&number(json!(u64::MAX)), &number(json!(1.9e19))), Some(Ordering::Less));
        assert_eq!(compare(&number(json!(i64::MIN)), &number(json!(-1e300))), Some(Ordering::Greater));
    }
}
