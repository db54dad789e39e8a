import { Page } from '../components.tsx';

export function TimelinePage(_props: { params?: URLSearchParams }) {
  return <Page title="timeline">Not built yet.</Page>;
}
