import { Page } from '../components.tsx';

export function SourcesPage(_props: { params?: URLSearchParams }) {
  return <Page title="sources">Not built yet.</Page>;
}
