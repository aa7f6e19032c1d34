import { Navigate, Route, Routes, useLocation } from 'react-router';
import { Layout } from './components/Layout';
import { NotFound } from './components/States';
import { OverviewPage } from './pages/Overview';
import { QueuePage } from './pages/Queue';
import { SignInPage } from './pages/SignIn';
import { JobDetailPage } from './pages/JobDetail';
import { JobsPage } from './pages/Jobs';
import { TriggerJobPage } from './pages/TriggerJob';
import { MachinesPage } from './pages/Machines';
import { useSession } from './session-context';
import { AdminOnly } from './components/AdminOnly';
import { ApiKeysPage } from './pages/ApiKeys';
import { AuditLogPage } from './pages/AuditLog';
import { SchedulesPage } from './pages/Schedules';
import { TriggersPage } from './pages/Triggers';
import { UsersPage } from './pages/Users';
import { PasswordPage } from './pages/Password';
import { WebhooksPage } from './pages/Webhooks';
import { WebhookDeliveriesPage } from './pages/WebhookDeliveries';
import { EventsPage } from './pages/Events';
import { ProcessesPage } from './pages/Processes';
import { QueuesPage } from './pages/Queues';
import { AssetsPage } from './pages/Assets';
import { FoldersPage } from './pages/Folders';

export function App() {
  const { session, endReason } = useSession();
  const location = useLocation();
  if (!session) {
    // every page but sign-in needs a session; come back to where the user was going afterwards.
    // A sign-out leaves no errand: whoever signs in next in this tab, maybe someone else (a new
    // member after the admin who made them), starts at the overview, not on the page the last
    // user left, which may be theirs alone
    const from = endReason === 'signed-out' ? null : { from: location.pathname + location.search };
    if (location.pathname !== '/sign-in') return <Navigate to="/sign-in" replace state={from} />;
    return <SignInPage />;
  }
  // a one-time password opens nothing but its replacement (the API answers 403 to the rest)
  if (session.user.must_change_password) return <PasswordPage forced />;
  return (
    <Routes>
      <Route path="/sign-in" element={<Navigate to={(location.state as { from?: string } | null)?.from ?? '/'} replace />} />
      <Route element={<Layout />}>
        <Route index element={<OverviewPage />} />
        <Route path="queues" element={<QueuesPage />} />
        <Route path="queues/:queueId" element={<QueuePage />} />
        <Route path="processes" element={<AdminOnly><ProcessesPage /></AdminOnly>} />
        <Route path="asset-catalogue" element={<AdminOnly><AssetsPage /></AdminOnly>} />
        <Route path="folders" element={<AdminOnly><FoldersPage /></AdminOnly>} />
        <Route path="jobs" element={<JobsPage />} />
        <Route path="jobs/new" element={<AdminOnly><TriggerJobPage /></AdminOnly>} />
        <Route path="jobs/:jobId" element={<JobDetailPage />} />
        <Route path="machines" element={<MachinesPage />} />
        <Route path="api-keys" element={<AdminOnly><ApiKeysPage /></AdminOnly>} />
        <Route path="audit-log" element={<AdminOnly><AuditLogPage /></AdminOnly>} />
        <Route path="users" element={<AdminOnly><UsersPage /></AdminOnly>} />
        <Route path="password" element={<PasswordPage />} />
        <Route path="schedules" element={<SchedulesPage />} />
        <Route path="triggers" element={<TriggersPage />} />
        <Route path="webhooks" element={<AdminOnly><WebhooksPage /></AdminOnly>} />
        <Route path="webhooks/:webhookId/deliveries" element={<AdminOnly><WebhookDeliveriesPage /></AdminOnly>} />
        <Route path="events" element={<AdminOnly><EventsPage /></AdminOnly>} />
        <Route path="*" element={<NotFound />} />
      </Route>
    </Routes>
  );
}
