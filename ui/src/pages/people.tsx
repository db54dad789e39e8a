import { Page } from '../components.tsx';

export function PeoplePage(_props: { params?: URLSearchParams }) {
  return <Page title="People">Not built yet.</Page>;
}
export function PersonPage(_props: { id: string }) {
  return <Page title="Person">Not built yet.</Page>;
}
