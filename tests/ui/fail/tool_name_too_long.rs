use tool_runtime::tool;

#[tool(undocumented, name = "a_tool_name_that_is_far_longer_than_the_sixty_four_characters_providers_accept")]
async fn read(path: String) -> String {
    path
}

fn main() {}
