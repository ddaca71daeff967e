//! Views of the platform's own objects.

use crate::view;

view! {
    /// An ODH `DSCInitialization`.
    DscInitialization
}

impl<'a> DscInitialization<'a> {
    /// `spec.applicationsNamespace`, when set and non-empty: the platform's own namespace.
    pub fn applications_namespace(&self) -> Option<&'a str> {
        self.object()
            .str_at(&["spec", "applicationsNamespace"])
            .filter(|ns| !ns.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::Object;
    use odh_test_fixtures::dsc_initialization;

    #[test]
    fn applications_namespace() {
        let set = Object(
            dsc_initialization("d")
                .applications_namespace("odh")
                .build(),
        );
        assert_eq!(
            DscInitialization::of(&set).applications_namespace(),
            Some("odh")
        );
        let empty = Object(dsc_initialization("d").applications_namespace("").build());
        assert_eq!(DscInitialization::of(&empty).applications_namespace(), None);
    }
}
