import { Page } from '../components.tsx';

export function RelationshipsPage(_props: { params?: URLSearchParams }) {
  return <Page title="relationships">Not built yet.</Page>;
}
