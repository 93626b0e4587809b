//! Every page of a mounted server's list (`tools/list`, `resources/list`,
//! `resources/templates/list`, `prompts/list`), following `nextCursor`, within bounds: a server
//! that hands back a cursor it gave before (a loop), or goes on past [`MAX_PAGES`] pages or
//! [`MAX_ITEMS`] items, ends the listing with an error instead of listing forever.

use std::collections::HashSet;
use std::future::Future;

use rmcp::service::ServiceError;

/// The most pages one listing reads.
pub(crate) const MAX_PAGES: usize = 1000;
/// The most items one listing takes.
pub(crate) const MAX_ITEMS: usize = 10_000;

/// Every item of `method`'s list; `fetch` gets one page (the first for `None`) and its next
/// cursor. The error says what went wrong, for "it did not list ... (ERROR)".
pub(crate) async fn every<T, F, Fut>(method: &str, mut fetch: F) -> Result<Vec<T>, PageError>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let (page, next) = fetch(cursor.take()).await.map_err(PageError::Service)?;
        items.extend(page);
        if items.len() > MAX_ITEMS {
            return Err(PageError::Endless(format!(
                "its {method} goes on past {MAX_ITEMS} items, more than a mount takes"
            )));
        }
        let Some(next) = next else { return Ok(items) };
        if !seen.insert(next.clone()) {
            return Err(PageError::Endless(format!(
                "its {method} pages in a circle: it gave the cursor `{}` twice",
                tool_core::words::excerpt_of(&next, 40)
            )));
        }
        cursor = Some(next);
    }
    Err(PageError::Endless(format!("its {method} goes on past {MAX_PAGES} pages, more than a mount reads")))
}

/// Why a listing stopped.
#[derive(Debug)]
pub(crate) enum PageError {
    /// A request failed.
    Service(ServiceError),
    /// The server's pages did not end.
    Endless(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pages_are_followed_to_the_end_and_loops_are_stopped() {
        let listed = every("tools/list", |cursor| async move {
            Ok(match cursor.as_deref() {
                None => (vec![1, 2], Some("a".to_owned())),
                Some("a") => (vec![3], Some("b".to_owned())),
                _ => (vec![4], None),
            })
        })
        .await
        .unwrap();
        assert_eq!(listed, [1, 2, 3, 4]);

        let looping = every("tools/list", |cursor| async move {
            Ok((vec![0], Some(if cursor.is_none() { "x" } else { "y" }.to_owned())))
        })
        .await
        .unwrap_err();
        assert!(
            matches!(&looping, PageError::Endless(why) if why.contains("gave the cursor `y` twice")),
            "{looping:?}"
        );

        let mut n = 0u32;
        let endless = every("prompts/list", |_| {
            n += 1;
            let next = n.to_string();
            async move { Ok((vec![0u8], Some(next))) }
        })
        .await
        .unwrap_err();
        assert!(
            matches!(&endless, PageError::Endless(why) if why.contains("past 1000 pages")),
            "{endless:?}"
        );

        let huge = every("resources/list", |cursor| async move {
            let next = cursor.map_or(0, |c| c.parse::<u32>().unwrap()) + 1;
            Ok((vec![0u8; 4000], Some(next.to_string())))
        })
        .await
        .unwrap_err();
        assert!(matches!(&huge, PageError::Endless(why) if why.contains("past 10000 items")), "{huge:?}");
    }
}
