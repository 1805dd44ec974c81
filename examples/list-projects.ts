// Signs in with the device flow and lists your projects.
//   CONTENT_SERVICE_ISSUER=http://localhost:8080 CONTENT_SERVICE_CLIENT_ID=… npx tsx examples/list-projects.ts
import { ContentServiceClient } from '@content-service/client';

const client = await ContentServiceClient.discover({
  issuer: process.env.CONTENT_SERVICE_ISSUER!,
  clientId: process.env.CONTENT_SERVICE_CLIENT_ID!,
});
await client.signInWithDevice({
  onCode: (code) => console.log(`Open ${code.verification_uri_complete} and approve ${code.user_code}`),
});
for await (const project of client.projects.list()) console.log(project.projectId, project.title);
await client.signOut();
