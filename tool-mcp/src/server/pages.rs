//! Pages of `tools/list`, `resources/list`, `resources/templates/list` and `prompts/list`: at
//! most [`McpServerBuilder::page_size`](super::McpServerBuilder::page_size) items each, the next
//! page named by an opaque cursor.
//!
//! A cursor names the offset of its page and carries a tag made with a key of this process, over
//! the offset and the method: a cursor that was not given out by this server for this method
//! (made up, edited, from another list, from a server run before) is refused with `-32602`, as is
//! one past the end of a list that shrank since.

use std::hash::BuildHasher;
use std::sync::OnceLock;

use rmcp::model::ErrorData;

/// How many items a page holds unless configured: enough that lists of ordinary size come whole.
pub const DEFAULT_PAGE_SIZE: usize = 1000;

/// The page of `items` that `cursor` names (the first without one), and the cursor of the next
/// page when there is one.
pub(crate) fn page<T>(
    items: &[T],
    cursor: Option<&str>,
    size: usize,
    method: &str,
) -> Result<(Vec<T>, Option<String>), ErrorData>
where
    T: Clone,
{
    let start = match cursor {
        None => 0,
        Some(cursor) => match read(cursor, method) {
            Some(offset) if offset < items.len() => offset,
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "Invalid cursor for `{method}`: the list is shorter now than when the cursor was given (it \
                         changed). List again from the start, without a cursor."
                    ),
                    None,
                ));
            }
            None => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "Invalid cursor for `{method}`: `{}` is not a cursor this server gave for this list. Send \
                         the `nextCursor` of the previous page as it came, or no cursor for the first page.",
                        tool_core::words::excerpt_of(cursor, 40)
                    ),
                    None,
                ));
            }
        },
    };
    let size = size.max(1);
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| write(end, method));
    Ok((items[start..end].to_vec(), next))
}

fn key() -> &'static std::collections::hash_map::RandomState {
    static KEY: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    KEY.get_or_init(std::collections::hash_map::RandomState::new)
}

fn tag(offset: usize, method: &str) -> u64 {
    key().hash_one((offset, method))
}

fn write(offset: usize, method: &str) -> String {
    format!("{offset:x}.{:016x}", tag(offset, method))
}

fn read(cursor: &str, method: &str) -> Option<usize> {
    let (offset, given) = cursor.split_once('.')?;
    if offset.is_empty() || offset.len() > 16 || given.len() != 16 {
        return None;
    }
    let offset = usize::from_str_radix(offset, 16).ok()?;
    let given = u64::from_str_radix(given, 16).ok()?;
    (write(offset, method) == cursor && tag(offset, method) == given).then_some(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_their_cursors_to_the_end() {
        let items: Vec<u32> = (0..7).collect();
        let (first, next) = page(&items, None, 3, "prompts/list").unwrap();
        assert_eq!(first, [0, 1, 2]);
        let (second, next) = page(&items, next.as_deref(), 3, "prompts/list").unwrap();
        assert_eq!(second, [3, 4, 5]);
        let (third, next) = page(&items, next.as_deref(), 3, "prompts/list").unwrap();
        assert_eq!((third, next), (vec![6], None));
        let (whole, next) = page(&items, None, DEFAULT_PAGE_SIZE, "prompts/list").unwrap();
        assert_eq!((whole.len(), next), (7, None));
        let (empty, next) = page::<u32>(&[], None, 3, "prompts/list").unwrap();
        assert_eq!((empty.len(), next), (0, None));
    }

    #[test]
    fn cursors_not_given_for_this_list_are_invalid_params() {
        let items: Vec<u32> = (0..7).collect();
        let (_, next) = page(&items, None, 3, "resources/list").unwrap();
        let next = next.unwrap();
        // Another list's cursor, an edited one, a made-up one, one past the end of a shrunk list.
        let other = page(&items, None, 3, "prompts/list").unwrap().1.unwrap();
        let edited = format!("4{}", &next[1..]);
        for bad in [other.as_str(), edited.as_str(), "3", "", "3.", ".0", "zz.0000000000000000", "\u{1F600}"]
        {
            let error = page(&items, Some(bad), 3, "resources/list").unwrap_err();
            assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad}");
            assert!(error.message.contains("is not a cursor this server gave"), "{bad}: {}", error.message);
        }
        let error = page(&items[..2], Some(&next), 3, "resources/list").unwrap_err();
        assert!(error.message.contains("List again from the start"), "{}", error.message);
    }
}
