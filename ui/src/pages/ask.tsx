import { Page } from '../components.tsx';

export function AskPage(_props: { params?: URLSearchParams }) {
  return <Page title="ask">Not built yet.</Page>;
}
